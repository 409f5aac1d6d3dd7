package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
)

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
	// apiMeter measures the API server's memory while each client runs.
	apiMeter *peakMeter
	// watchList says why the server does not serve WatchList ("": it does).
	watchList string
	// done are the sizes measured so far, for the memory guard.
	done []*sizeResult
	// live writes a pod before each measured run (-live); nil otherwise.
	live *toucher
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
	rep := &report{cfg: cfg, began: time.Now(), machine: readMachine()}
	if rep.baseline, err = e.measureBaseline(ctx); err != nil {
		return err
	}
	var failed []error
	if !cfg.crsOnly {
		failed = e.measureSizes(ctx, tmp, rep)
	}
	if cfg.clusters > 0 && ctx.Err() == nil {
		var err error
		if rep.fleet, err = e.measureFleet(ctx, tmp); err != nil {
			failed = append(failed, fmt.Errorf("%d clusters: %w", cfg.clusters, err))
		}
	}
	if cfg.crs > 0 && ctx.Err() == nil {
		var err error
		if rep.crs, err = e.measureCustomResources(ctx, tmp); err != nil {
			failed = append(failed, fmt.Errorf("%d custom resources: %w", cfg.crs, err))
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

// measureSizes starts the cluster, measures every size on it and stops it
// again, so that the clusters of -clusters have the memory to themselves.
func (e *env) measureSizes(ctx context.Context, tmp string, rep *report) []error {
	stopCluster, err := e.startCluster(ctx, tmp)
	if err != nil {
		return []error{err}
	}
	defer func() {
		if err := stopCluster(); err != nil {
			e.logf("stop cluster: %v", err)
		}
	}()
	l, err := newLoader(e)
	if err != nil {
		return []error{err}
	}
	e.apiMeter = newPeakMeter(e.cluster.PIDs()[localcluster.APIServer])
	rep.apiMethod = e.apiMeter.method()
	if e.watchList, err = e.probeWatchList(ctx); err != nil {
		return []error{err}
	}
	rep.watchList = e.watchList
	if e.cfg.live {
		// Only the sizes' cluster: the fleet's clusters are measured idle.
		e.live = &toucher{cs: l.cs}
		defer func() { e.live = nil }()
	}
	var failed []error
	for _, n := range e.cfg.sizes {
		res, err := e.measureSize(ctx, l, n)
		if res != nil {
			rep.sizes = append(rep.sizes, res)
			e.done = append(e.done, res)
		}
		if err != nil {
			failed = append(failed, fmt.Errorf("%d pods: %w", n, err))
			if ctx.Err() != nil {
				break
			}
		}
	}
	return failed
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
	res.server = e.serverMemory()
	if e.cfg.wire {
		if res.wire, err = measureWire(ctx, l.rest, n); err != nil {
			return res, err
		}
	}
	res.otherAPIServers = otherAPIServers(e.cluster.PIDs()[localcluster.APIServer])
	if err := e.measureCommands(ctx, res); err != nil {
		return res, err
	}
	if e.cfg.apiMemory {
		if err := e.measureAPIServerMemory(ctx, l.cs, res); err != nil {
			return res, err
		}
	}
	for _, rate := range e.cfg.rates {
		if !e.cfg.churn {
			break
		}
		for _, wt := range e.watchers() {
			if err := e.churn(ctx, l, res, rate, wt); err != nil {
				return res, fmt.Errorf("churn at %g/s: %w", rate, err)
			}
		}
	}
	if e.cfg.verdictRuns > 0 {
		if res.verdicts, err = e.measureVerdicts(ctx, l, e.cfg.rates[0]); err != nil {
			return res, err
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
		if err := e.adoptShape(ctx); err != nil {
			return nil, err
		}
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
	c, err := e.newCluster(ctx, dir, cfg.keep)
	if err != nil {
		return nil, err
	}
	e.cluster, e.kubeconfig = c, c.Kubeconfig
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

// newCluster starts a control plane in dir with the bench's settings.
func (e *env) newCluster(ctx context.Context, dir string, detach bool) (*localcluster.Cluster, error) {
	t := time.Now()
	sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	c, err := localcluster.Start(sctx, e.clusterOptions(dir, detach))
	if err != nil {
		return nil, err
	}
	e.logf("cluster ready in %s in %s", time.Since(t).Round(100*time.Millisecond), dir)
	return c, nil
}

// clusterOptions are the options of every cluster the bench starts.
func (e *env) clusterOptions(dir string, detach bool) localcluster.Options {
	cfg := e.cfg
	nodes := 1
	if cfg.status == "kwok" {
		nodes = cfg.nodes
	}
	return localcluster.Options{
		BinDir: cfg.bin, Dir: dir, Nodes: nodes, APIServerArgs: cfg.apiArgs,
		PodStages: "fast", Detach: detach, Log: e.log,
		// The crash-log keeper watches all pods: one more client competing
		// with the one being measured.
		NoCrashLogs: true,
	}
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
// helper that measures each client and the floor client. Every podsync
// binary, this tree's and each -compare build's, reaches the plugin folder
// the same way, by installFile: how a binary's file was written changes
// its process's peak RSS by some 25 MiB (see installFile).
func buildPlugin(ctx context.Context, dir, prebuilt string, others []build, stderr io.Writer) error {
	root, err := moduleRoot(ctx)
	if err != nil {
		return err
	}
	bctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	// The spawn and floor helpers belong to the bench's own module in
	// hack/bench; the plugin to the module at the repository root.
	benchDir := filepath.Join(root, "hack", "bench")
	builds := []struct{ out, dir, pkg string }{
		{filepath.Join(dir, "spawn"), benchDir, "./spawn"},
		{filepath.Join(dir, "floor"), benchDir, "./floor"},
	}
	if prebuilt == "" {
		prebuilt = filepath.Join(dir, "build", "kubectl-podsync")
		builds = append(builds, struct{ out, dir, pkg string }{prebuilt, root, "./cmd/kubectl-podsync"})
	}
	for _, b := range builds {
		cmd := exec.CommandContext(bctx, "go", "build", "-trimpath",
			"-ldflags", "-s -w -X github.com/kubectl-podsync/kubectl-podsync/pkg/version.Version=v0.0.0-bench",
			"-o", b.out, b.pkg)
		cmd.Dir = b.dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stdout, cmd.Stderr = stderr, stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build %s: %w", b.pkg, err)
		}
	}
	if err := installFile(prebuilt, filepath.Join(dir, "kubectl-podsync")); err != nil {
		return err
	}
	for _, b := range others {
		if err := installFile(b.path, filepath.Join(dir, "kubectl-podsync"+b.name)); err != nil {
			return err
		}
	}
	return nil
}

// installFile copies a plugin binary in writes of 32 KiB, as krew's
// io.Copy out of a release archive writes it. How the file was written
// shows in the peak RSS of the process that runs it (the page cache seems
// to keep a file made by big writes in big pieces, and a process that
// touches a piece of its binary counts all of it): the same 69 MB binary
// written in one write ran `-A --once -o json` at 5,000 pods in 100 MiB,
// copied by cp or in 32 KiB writes in 77 MiB.
func installFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("plugin: %w", err)
	}
	defer func() { _ = src.Close() }()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return fmt.Errorf("plugin folder: %w", err)
	}
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return fmt.Errorf("install the plugin: %w", err)
	}
	// The wrappers keep io.CopyBuffer from handing the copy to the
	// kernel (copy_file_range), which would not write in 32 KiB pieces.
	if _, err := io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, make([]byte, 32<<10)); err != nil {
		_ = dst.Close()
		return fmt.Errorf("install the plugin: %w", err)
	}
	if err := dst.Close(); err != nil {
		return fmt.Errorf("install the plugin: %w", err)
	}
	return nil
}

// moduleRoot is the repository's root: the folder of the kubectl-podsync
// module the bench is run from, or two folders above the bench's own module
// when it is run from hack/bench.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run the bench from the kubectl-podsync repository (make bench)")
	}
	dir := filepath.Dir(mod)
	if filepath.Base(dir) == "bench" && filepath.Base(filepath.Dir(dir)) == "hack" {
		dir = filepath.Dir(filepath.Dir(dir))
	}
	return dir, nil
}

// serverMemory is what the control plane holds once the pods are loaded.
type serverMemory struct {
	apiRSS, etcdRSS, etcdDB int64 // bytes; 0: not known
}

func (e *env) serverMemory() serverMemory {
	pids := e.cluster.PIDs()
	var m serverMemory
	m.apiRSS, _ = procRSS(pids[localcluster.APIServer])
	m.etcdRSS, _ = procRSS(pids[localcluster.Etcd])
	if fi, err := os.Stat(filepath.Join(e.cluster.Dir, "etcd", "member", "snap", "db")); err == nil {
		m.etcdDB = fi.Size()
	}
	return m
}

// churn measures one watcher at rate. A peer that would not fit in memory,
// or that fails, is reported as such; podsync failing ends the size.
func (e *env) churn(ctx context.Context, l *loader, res *sizeResult, rate float64, wt watcher) error {
	if like := commandByID(wt.fitsLike); like != nil {
		if why := e.wontFit(*like, res.pods); why != "" {
			res.churn = append(res.churn, &churnResult{Watcher: wt, Rate: rate, NotRun: why})
			return nil
		}
	}
	c, err := e.runChurn(ctx, l, rate, wt)
	if err != nil && !wt.isPodsync() && ctx.Err() == nil {
		e.logf("churn, %s: %v", wt.id, err)
		if c == nil {
			c = &churnResult{Watcher: wt, Rate: rate}
		}
		c.NotRun, err = "failed: "+err.Error(), nil
	}
	if c != nil {
		res.churn = append(res.churn, c)
	}
	return err
}
