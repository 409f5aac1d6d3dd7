package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
)

// config is every flag of a bench run.
type config struct {
	sizes      []int
	runs       int
	rates      []float64
	duration   time.Duration
	churn      bool
	method     string
	warmup     bool
	check      bool
	bin        string
	plugin     string
	compare    []build
	dir        string
	attach     string
	keep       bool
	status     string
	nodes      int
	namespaces int
	perApp     int
	loaders    int
	only       map[string]bool
	out        string
	smoke      bool
	timeout    time.Duration
	apiArgs    []string
}

func parseConfig(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fl := flag.NewFlagSet("bench", flag.ContinueOnError)
	fl.SetOutput(stderr)
	pods := fl.String("pods", "20000", "pod counts to measure, comma-separated and increasing (e.g. 5000,20000,50000); pods are added between sizes")
	fl.IntVar(&c.runs, "runs", 5, "repetitions of each command per size, alternating the commands")
	rates := fl.String("rate", "1000", "churn: pod updates per second; several, comma-separated, run one churn each (e.g. 1000,250)")
	fl.DurationVar(&c.duration, "duration", 60*time.Second, "churn: how long the loader updates pods")
	fl.BoolVar(&c.churn, "churn", true, "run the churn measurement after the command measurements")
	fl.StringVar(&c.method, "update", "put", "churn: how the loader changes a pod: put (a protobuf update of the whole pod) or patch (a JSON merge patch of its annotations)")
	fl.BoolVar(&c.warmup, "warmup", true, "run each command once, untimed, before the measured runs")
	fl.BoolVar(&c.check, "check", true, "before measuring, check that podsync's table and JSON match kubectl's and that the table takes its fast path")
	fl.StringVar(&c.bin, "bin", os.Getenv("PODSYNC_TOOLS_BIN"), "folder with etcd, kube-apiserver, ..., kubectl and kwok (hack/build-tools.sh prints it; default $PODSYNC_TOOLS_BIN)")
	compare := fl.String("compare", "", "also measure these prebuilt plugins, alternating with the rest: NAME=PATH,... (NAME: letters and digits; for before/after tables)")
	fl.StringVar(&c.plugin, "plugin", "", "measure this prebuilt kubectl-podsync instead of building the one in this tree (for before/after comparisons)")
	fl.StringVar(&c.dir, "dir", "", "cluster working folder (default: a new temporary folder)")
	fl.StringVar(&c.attach, "attach", "", "use the cluster a previous -keep run left in this folder instead of starting one")
	fl.BoolVar(&c.keep, "keep", false, "leave the cluster running at the end (for profiling; stop it with go run ./hack/cluster down --dir DIR)")
	fl.StringVar(&c.status, "status", "self", "who makes pods Running and Ready: self (the loader writes the statuses, on nodes kwok does not manage) or kwok (kwok's fast stages on its nodes)")
	fl.IntVar(&c.nodes, "nodes", 10, "nodes the pods are spread over")
	fl.IntVar(&c.namespaces, "namespaces", 20, "namespaces the pods are spread over")
	fl.IntVar(&c.perApp, "pods-per-replicaset", 25, "pods per ReplicaSet owner")
	fl.IntVar(&c.loaders, "loaders", 48, "goroutines creating pods")
	only := fl.String("only", "", "measure only these commands (comma-separated ids: "+strings.Join(commandIDs(), ",")+")")
	fl.StringVar(&c.out, "out", "", "also write the Markdown report to this file")
	fl.BoolVar(&c.smoke, "smoke", false, "small run for make test: -pods 300 -runs 1 -duration 5s -rate 300 -warmup=false unless given; exits 1 if anything is lost")
	fl.DurationVar(&c.timeout, "timeout", 4*time.Hour, "bound for the whole run")
	apiArgs := fl.String("apiserver-args", "--max-requests-inflight=1000,--max-mutating-requests-inflight=500", "extra kube-apiserver flags, comma-separated")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err}
	}
	if fl.NArg() > 0 {
		return nil, usageError{fmt.Errorf("unexpected arguments %q", fl.Args())}
	}
	set := map[string]bool{}
	fl.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if c.smoke {
		defaults := map[string]func(){
			"pods":     func() { *pods = "300" },
			"runs":     func() { c.runs = 1 },
			"duration": func() { c.duration = 5 * time.Second },
			"rate":     func() { *rates = "300" },
			"warmup":   func() { c.warmup = false },
			"timeout":  func() { c.timeout = 10 * time.Minute },
		}
		for name, apply := range defaults {
			if !set[name] {
				apply()
			}
		}
	}
	var err error
	if c.sizes, err = parseSizes(*pods); err != nil {
		return nil, usageError{err}
	}
	if c.rates, err = parseRates(*rates); err != nil {
		return nil, usageError{err}
	}
	if c.compare, err = parseBuilds(*compare); err != nil {
		return nil, usageError{err}
	}
	if *only != "" {
		c.only = map[string]bool{}
		known := "," + strings.Join(commandIDs(), ",") + ","
		for _, id := range strings.Split(*only, ",") {
			if !strings.Contains(known, ","+id+",") {
				return nil, usageError{fmt.Errorf("-only: unknown command %q (known: %s)", id, strings.Trim(known, ","))}
			}
			c.only[id] = true
		}
	}
	if *apiArgs != "" {
		c.apiArgs = strings.Split(*apiArgs, ",")
	}
	switch {
	case c.bin == "":
		return nil, usageError{errors.New("-bin or $PODSYNC_TOOLS_BIN is required (PODSYNC_TOOLS_BIN=\"$(hack/build-tools.sh)\")")}
	case c.runs < 1 || c.runs > 100:
		return nil, usageError{fmt.Errorf("-runs %d: want 1 to 100", c.runs)}
	case c.duration <= 0 || c.duration > time.Hour:
		return nil, usageError{fmt.Errorf("-duration %s: want more than 0 and at most 1h", c.duration)}
	case c.method != "put" && c.method != "patch":
		return nil, usageError{fmt.Errorf("-update %q: want put or patch", c.method)}
	case c.status != "self" && c.status != "kwok":
		return nil, usageError{fmt.Errorf("-status %q: want self or kwok", c.status)}
	case c.nodes < 1 || c.nodes > 60:
		return nil, usageError{fmt.Errorf("-nodes %d: want 1 to 60", c.nodes)}
	case c.namespaces < 1 || c.namespaces > 1000:
		return nil, usageError{fmt.Errorf("-namespaces %d: want 1 to 1000", c.namespaces)}
	case c.perApp < 1 || c.loaders < 1 || c.loaders > 512:
		return nil, usageError{errors.New("-pods-per-replicaset must be at least 1 and -loaders 1 to 512")}
	case c.timeout <= 0:
		return nil, usageError{errors.New("-timeout must be positive")}
	}
	return c, nil
}

// build is a prebuilt plugin measured next to this tree's.
type build struct{ name, path string }

var buildName = regexp.MustCompile(`^[A-Za-z0-9]+$`)

func parseBuilds(s string) ([]build, error) {
	if s == "" {
		return nil, nil
	}
	var out []build
	for _, f := range strings.Split(s, ",") {
		name, path, ok := strings.Cut(f, "=")
		if !ok || !buildName.MatchString(name) || path == "" {
			return nil, fmt.Errorf("-compare: %q is not NAME=PATH with a NAME of letters and digits", f)
		}
		out = append(out, build{name: name, path: path})
	}
	return out, nil
}

func parseRates(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || r <= 0 || r > 20000 {
			return nil, fmt.Errorf("-rate: %q is not a rate above 0 and at most 20000 updates per second", f)
		}
		out = append(out, r)
	}
	return out, nil
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 || n > 200000 {
			return nil, fmt.Errorf("-pods: %q is not a pod count from 2 to 200000", f)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("-pods: counts must increase (%d after %d)", n, out[len(out)-1])
		}
		out = append(out, n)
	}
	return out, nil
}

// env is what every measurement needs.
type env struct {
	cfg        *config
	cluster    *localcluster.Cluster
	kubeconfig string
	kubectl    string
	spawn      string // the helper that measures each client
	path       string // PATH with the plugin first
	pluginDir  string
	log        io.Writer
}

func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(e.log, "bench %s: "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func benchMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	e := &env{cfg: cfg, log: stderr, kubectl: filepath.Join(cfg.bin, "kubectl")}
	tmp, err := os.MkdirTemp("", "podsync-bench-")
	if err != nil {
		return fmt.Errorf("temporary folder: %w", err)
	}
	defer os.RemoveAll(tmp)
	e.pluginDir = filepath.Join(tmp, "plugin")
	if err := buildPlugin(ctx, e.pluginDir, cfg.plugin, cfg.compare, stderr); err != nil {
		return err
	}
	e.spawn = filepath.Join(e.pluginDir, "spawn")
	e.path = e.pluginDir + string(os.PathListSeparator) + cfg.bin + string(os.PathListSeparator) + os.Getenv("PATH")
	machineBefore := readMachine()

	stopCluster, err := e.startCluster(ctx, tmp)
	if err != nil {
		return err
	}
	defer func() {
		if err := stopCluster(); err != nil {
			e.logf("stop cluster: %v", err)
		}
	}()

	l, err := newLoader(e)
	if err != nil {
		return err
	}
	rep := &report{cfg: cfg, began: time.Now(), machine: machineBefore}
	if rep.baseline, err = e.measureBaseline(ctx); err != nil {
		return err
	}
	var failed []error
	for _, n := range cfg.sizes {
		res, err := e.measureSize(ctx, l, n)
		if res != nil {
			rep.sizes = append(rep.sizes, res)
		}
		if err != nil {
			failed = append(failed, fmt.Errorf("%d pods: %w", n, err))
			if ctx.Err() != nil {
				break
			}
		}
	}
	rep.machineAfter = readMachine()
	rep.took = time.Since(rep.began)
	text := rep.markdown()
	fmt.Fprint(stdout, text)
	if cfg.out != "" {
		if err := os.WriteFile(cfg.out, []byte(text), 0o644); err != nil {
			failed = append(failed, fmt.Errorf("write %s: %w", cfg.out, err))
		}
	}
	if lost := rep.lost(); lost > 0 {
		failed = append(failed, fmt.Errorf("churn: %d pods whose final state podsync did not print", lost))
	}
	return errors.Join(failed...)
}

// measureSize loads the cluster to n pods and runs every measurement.
func (e *env) measureSize(ctx context.Context, l *loader, n int) (*sizeResult, error) {
	res := &sizeResult{pods: n}
	t := time.Now()
	ls, err := l.ensure(ctx, n)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	res.load = ls
	e.logf("%d pods Running and Ready (load %s)", n, time.Since(t).Round(time.Second))
	if res.wire, err = measureWire(ctx, l.rest); err != nil {
		return res, err
	}
	res.otherAPIServers = otherAPIServers(e.cluster.PIDs()[localcluster.APIServer])
	if res.commands, err = e.measureCommands(ctx, l.total); err != nil {
		return res, err
	}
	for _, rate := range e.cfg.rates {
		if !e.cfg.churn {
			break
		}
		c, err := e.runChurn(ctx, l, rate)
		if c != nil {
			res.churn = append(res.churn, c)
		}
		if err != nil {
			return res, fmt.Errorf("churn at %g/s: %w", rate, err)
		}
	}
	if others := otherAPIServers(e.cluster.PIDs()[localcluster.APIServer]); len(others) > len(res.otherAPIServers) {
		res.otherAPIServers = others
	}
	return res, nil
}

// startCluster starts (or attaches to) the local control plane and stops
// the controller manager and the scheduler: the pods are bound already and
// their ReplicaSet owners are not meant to be reconciled, and on two cores
// every extra watcher of all pods competes with the client being measured.
func (e *env) startCluster(ctx context.Context, tmp string) (func() error, error) {
	cfg := e.cfg
	if cfg.attach != "" {
		c, err := localcluster.Attach(cfg.attach)
		if err != nil {
			return nil, err
		}
		e.cluster, e.kubeconfig = c, c.Kubeconfig
		e.logf("attached to the cluster in %s", cfg.attach)
		return func() error { return nil }, e.stopControllers()
	}
	dir := cfg.dir
	if dir == "" {
		dir = filepath.Join(tmp, "cluster")
		if cfg.keep {
			var err error
			if dir, err = os.MkdirTemp("", "podsync-bench-cluster-"); err != nil {
				return nil, fmt.Errorf("cluster folder: %w", err)
			}
		}
	}
	nodes := 1
	if cfg.status == "kwok" {
		nodes = cfg.nodes
	}
	t := time.Now()
	sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	c, err := localcluster.Start(sctx, localcluster.Options{
		BinDir: cfg.bin, Dir: dir, Nodes: nodes, APIServerArgs: cfg.apiArgs,
		PodStages: "fast", Detach: cfg.keep, Log: e.log,
		// The crash-log keeper watches all pods: one more client competing
		// with the one being measured.
		NoCrashLogs: true,
	})
	if err != nil {
		return nil, err
	}
	e.cluster, e.kubeconfig = c, c.Kubeconfig
	e.logf("cluster ready in %s in %s", time.Since(t).Round(100*time.Millisecond), dir)
	stop := func() error {
		if cfg.keep {
			e.logf("cluster left running: export KUBECONFIG=%s; stop it with: go run ./hack/cluster down --dir %s", c.Kubeconfig, dir)
			return nil
		}
		return c.Stop()
	}
	if err := e.stopControllers(); err != nil {
		return nil, errors.Join(err, stop())
	}
	return stop, nil
}

func (e *env) stopControllers() error {
	pids := e.cluster.PIDs()
	for _, name := range []string{localcluster.ControllerManager, localcluster.Scheduler} {
		if _, running := pids[name]; !running {
			continue
		}
		if err := e.cluster.Kill(name); err != nil {
			return fmt.Errorf("stop %s: %w", name, err)
		}
	}
	return nil
}

// buildPlugin builds the plugin as a user gets it (no race detector,
// trimmed paths, stripped), or copies a prebuilt one, and builds the spawn
// helper that measures each client and the floor client.
func buildPlugin(ctx context.Context, dir, prebuilt string, others []build, stderr io.Writer) error {
	root, err := moduleRoot(ctx)
	if err != nil {
		return err
	}
	bctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	builds := []struct{ out, pkg string }{
		{"spawn", "./hack/bench/spawn"},
		{"floor", "./hack/bench/floor"},
	}
	if prebuilt == "" {
		builds = append(builds, struct{ out, pkg string }{"kubectl-podsync", "./cmd/kubectl-podsync"})
	} else if err := copyFile(prebuilt, filepath.Join(dir, "kubectl-podsync")); err != nil {
		return err
	}
	for _, b := range others {
		if err := copyFile(b.path, filepath.Join(dir, "kubectl-podsync"+b.name)); err != nil {
			return err
		}
	}
	for _, b := range builds {
		cmd := exec.CommandContext(bctx, "go", "build", "-trimpath",
			"-ldflags", "-s -w -X github.com/kubectl-podsync/kubectl-podsync/pkg/version.Version=v0.0.0-bench",
			"-o", filepath.Join(dir, b.out), b.pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stdout, cmd.Stderr = stderr, stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build %s: %w", b.pkg, err)
		}
	}
	return nil
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("prebuilt plugin: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return fmt.Errorf("plugin folder: %w", err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		return fmt.Errorf("copy the plugin: %w", err)
	}
	return nil
}

func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run the bench from the kubectl-podsync module (go run ./hack/bench)")
	}
	return filepath.Dir(mod), nil
}
