//go:build unix

// Command cluster runs the local control plane of internal/localcluster
// outside of tests, for the demo and for trying the plugin by hand:
//
//	go run ./hack/cluster up --dir .cluster [--clusters N] [--nodes N] [--bin DIR] [--pod-stages general|fast]
//	go run ./hack/cluster env --dir .cluster
//	go run ./hack/cluster down --dir .cluster
//
// With --clusters N (2 or more), N clusters run side by side in
// DIR/podsync-1 ... DIR/podsync-N, and DIR/kubeconfig holds a context per
// cluster (podsync-1 ...; see localcluster.WriteMergedKubeconfig).
//
// Crash-looping pods get their logs from a keeper process per cluster,
// `cluster keep-crash-logs --dir CLUSTERDIR`, which up starts from a copy
// of this program in DIR/bin and down stops with the cluster.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  cluster up   --dir DIR [--clusters N] [--nodes N] [--bin BINDIR] [--pod-stages general|fast]
  cluster env  --dir DIR
  cluster down --dir DIR
`

// maxClusters keeps a typo from starting dozens of control planes.
const maxClusters = 5

// run returns the exit code: 0 done, 1 failed, 2 bad usage.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmds := map[string]func([]string, io.Writer, io.Writer) error{"up": up, "down": down, "env": env, keeperCommand: keepCrashLogs}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "unknown command %q\n%s", args[0], usage)
		return 2
	}
	err := cmd(args[1:], stdout, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintf(stderr, "%v\n%s", err, usage)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "cluster %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

type usageError struct{ error }

// parse reads the flags of one subcommand; --dir is always required.
func parse(fl *flag.FlagSet, args []string, dir *string) error {
	fl.StringVar(dir, "dir", "", "cluster working folder (required)")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if *dir == "" || fl.NArg() > 0 {
		return usageError{errors.New("--dir is required and no arguments are accepted")}
	}
	return nil
}

func up(args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("up", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var o localcluster.Options
	var clusters int
	fl.IntVar(&clusters, "clusters", 1, fmt.Sprintf("number of clusters side by side (at most %d)", maxClusters))
	fl.IntVar(&o.Nodes, "nodes", 3, "number of fake nodes (per cluster)")
	fl.StringVar(&o.BinDir, "bin", "", "folder with the pinned binaries (default: output of hack/build-tools.sh)")
	fl.StringVar(&o.PodStages, "pod-stages", "general", "kwok pod lifecycle: general (realistic delays) or fast")
	if err := parse(fl, args, &o.Dir); err != nil {
		return err
	}
	if clusters < 1 || clusters > maxClusters {
		return usageError{fmt.Errorf("--clusters %d: want 1 to %d", clusters, maxClusters)}
	}
	// The crash-log keeper runs from the cluster's folder: a relative
	// --dir (the demo's .cluster) would name a path that is not there.
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return fmt.Errorf("cluster folder %s: %w", o.Dir, err)
	}
	o.Dir = dir
	if err := refuseRunning(o.Dir); err != nil {
		return err
	}
	if o.BinDir == "" {
		bin, err := buildTools(stderr)
		if err != nil {
			return err
		}
		o.BinDir = bin
	}
	keeper, err := copySelf(filepath.Join(o.Dir, "bin"))
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.Log, o.Detach = stderr, true
	o.CrashLogsCommand = []string{keeper, keeperCommand, "--dir"}
	if clusters == 1 {
		c, err := localcluster.Start(ctx, o)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Cluster is up; kubeconfig: %s\n", c.Kubeconfig)
		printNext(stdout, c.Kubeconfig, o.Dir)
		return nil
	}
	return upMany(ctx, o, clusters, stdout)
}

func upMany(ctx context.Context, o localcluster.Options, n int, stdout io.Writer) error {
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("podsync-%d", i+1))
	}
	cs, err := localcluster.StartMany(ctx, o, names)
	if err != nil {
		return err
	}
	byName := map[string]*localcluster.Cluster{}
	for i, c := range cs {
		byName[names[i]] = c
	}
	kubeconfig := filepath.Join(o.Dir, "kubeconfig")
	if err := localcluster.WriteMergedKubeconfig(kubeconfig, byName); err != nil {
		return errors.Join(err, localcluster.StopAll(cs))
	}
	fmt.Fprintf(stdout, "%d clusters are up; kubeconfig: %s\n", n, kubeconfig)
	fmt.Fprintf(stdout, "Contexts: %s (admin, current: %s); restricted@NAME, no-pod-logs@NAME, no-events@NAME\n",
		strings.Join(names, ", "), names[0])
	fmt.Fprintf(stdout, "Watch them all:\n  kubectl podsync --context 'podsync-*' -A\n")
	printNext(stdout, kubeconfig, o.Dir)
	return nil
}

func printNext(stdout io.Writer, kubeconfig, dir string) {
	fmt.Fprintf(stdout, "Point your shell at it:\n  export KUBECONFIG=%s\n", kubeconfig)
	fmt.Fprintf(stdout, "Stop it:\n  go run ./hack/cluster down --dir %s\n", dir)
}

// clusterDirs returns the folders under dir that hold a cluster's state:
// dir itself for a single cluster, else its sub-folders (--clusters).
func clusterDirs(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, "state.json")); err == nil {
		return []string{dir}, nil
	}
	states, err := filepath.Glob(filepath.Join(dir, "*", "state.json"))
	if err != nil {
		return nil, fmt.Errorf("find clusters in %s: %w", dir, err)
	}
	var dirs []string
	for _, s := range states {
		dirs = append(dirs, filepath.Dir(s))
	}
	return dirs, nil
}

// refuseRunning keeps up from replacing the kubeconfig of clusters that
// still run in dir, in either layout.
func refuseRunning(dir string) error {
	dirs, err := clusterDirs(dir)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		c, err := localcluster.Attach(d)
		if err != nil {
			continue
		}
		if len(c.PIDs()) > 0 {
			return fmt.Errorf("a cluster is already running in %s; stop it first: go run ./hack/cluster down --dir %s", d, dir)
		}
	}
	return nil
}

// copySelf copies this program into dir for the crash-log keepers: `go
// run` deletes its build when it exits, and down must find them again.
func copySelf(dir string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find this program: %w", err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		return "", fmt.Errorf("copy this program: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("copy this program: %w", err)
	}
	dst := filepath.Join(dir, "cluster")
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, data, 0o755); err != nil {
		return "", fmt.Errorf("copy this program: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return "", fmt.Errorf("copy this program: %w", err)
	}
	return dst, nil
}

// keeperCommand is the subcommand a cluster runs as its crash-log keeper.
const keeperCommand = "keep-crash-logs"

// keepCrashLogs gives the crash-looping pods of the cluster in --dir their
// logs until SIGTERM.
func keepCrashLogs(args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet(keeperCommand, flag.ContinueOnError)
	fl.SetOutput(stderr)
	var dir string
	if err := parse(fl, args, &dir); err != nil {
		return err
	}
	c, err := localcluster.Attach(dir)
	if err != nil {
		return err
	}
	// stderr is the keeper's log file in the cluster's logs folder.
	c.LogTo(stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return c.KeepCrashLogs(ctx)
}

// buildTools runs hack/build-tools.sh, which prints the bin folder last.
func buildTools(stderr io.Writer) (string, error) {
	script := filepath.Join("hack", "build-tools.sh")
	if _, err := os.Stat(script); err != nil {
		return "", fmt.Errorf("run from the repository root or pass --bin: %w", err)
	}
	var out bytes.Buffer
	cmd := exec.Command("bash", script)
	cmd.Stdout, cmd.Stderr = &out, stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w", script, err)
	}
	var last string
	for sc := bufio.NewScanner(&out); sc.Scan(); {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			last = line
		}
	}
	if last == "" {
		return "", fmt.Errorf("%s printed no bin folder", script)
	}
	return last, nil
}

func down(args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("down", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var dir string
	if err := parse(fl, args, &dir); err != nil {
		return err
	}
	dirs, err := clusterDirs(dir)
	if err != nil {
		return err
	}
	if len(dirs) == 0 {
		fmt.Fprintf(stdout, "No cluster is running in %s.\n", dir)
		return nil
	}
	var errs []error
	for _, d := range dirs {
		c, err := localcluster.Attach(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue // stopped meanwhile
		}
		if err == nil {
			err = c.Stop()
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(stdout, "Cluster in %s stopped (logs stay in %s).\n", d, filepath.Join(d, "logs"))
	}
	return errors.Join(errs...)
}

func env(args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("env", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var dir string
	if err := parse(fl, args, &dir); err != nil {
		return err
	}
	dirs, err := clusterDirs(dir)
	if err != nil {
		return err
	}
	switch {
	case len(dirs) == 0:
		return fmt.Errorf("no cluster in %s", dir)
	case len(dirs) == 1 && dirs[0] == dir:
		c, err := localcluster.Attach(dir)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "export KUBECONFIG=%s\n", c.Kubeconfig)
	default:
		abs, err := filepath.Abs(filepath.Join(dir, "kubeconfig"))
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "export KUBECONFIG=%s\n", abs)
	}
	return nil
}
