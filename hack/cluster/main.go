//go:build unix

// Command cluster runs the local control plane of internal/localcluster
// outside of tests, for the demo and for trying the plugin by hand:
//
//	go run ./hack/cluster up --dir .cluster [--nodes N] [--bin DIR] [--pod-stages general|fast]
//	go run ./hack/cluster env --dir .cluster
//	go run ./hack/cluster down --dir .cluster
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
  cluster up   --dir DIR [--nodes N] [--bin BINDIR] [--pod-stages general|fast]
  cluster env  --dir DIR
  cluster down --dir DIR
`

// run returns the exit code: 0 done, 1 failed, 2 bad usage.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmds := map[string]func([]string, io.Writer, io.Writer) error{"up": up, "down": down, "env": env}
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
	fl.IntVar(&o.Nodes, "nodes", 3, "number of fake nodes")
	fl.StringVar(&o.BinDir, "bin", "", "folder with the pinned binaries (default: output of hack/build-tools.sh)")
	fl.StringVar(&o.PodStages, "pod-stages", "general", "kwok pod lifecycle: general (realistic delays) or fast")
	if err := parse(fl, args, &o.Dir); err != nil {
		return err
	}
	if o.BinDir == "" {
		bin, err := buildTools(stderr)
		if err != nil {
			return err
		}
		o.BinDir = bin
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.Log, o.Detach = stderr, true
	c, err := localcluster.Start(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Cluster is up; kubeconfig: %s\n", c.Kubeconfig)
	fmt.Fprintf(stdout, "Point your shell at it:\n  export KUBECONFIG=%s\n", c.Kubeconfig)
	fmt.Fprintf(stdout, "Stop it:\n  go run ./hack/cluster down --dir %s\n", o.Dir)
	return nil
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
	c, err := localcluster.Attach(dir)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stdout, "No cluster is running in %s.\n", dir)
		return nil
	}
	if err != nil {
		return err
	}
	if err := c.Stop(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Cluster in %s stopped (logs stay in %s).\n", dir, filepath.Join(dir, "logs"))
	return nil
}

func env(args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("env", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var dir string
	if err := parse(fl, args, &dir); err != nil {
		return err
	}
	c, err := localcluster.Attach(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "export KUBECONFIG=%s\n", c.Kubeconfig)
	return nil
}
