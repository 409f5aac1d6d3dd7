package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
)

// fleet is several local control planes started side by side and one
// kubeconfig with a context for each, named a, b, c, ...
type fleet struct {
	clusters   []*localcluster.Cluster
	contexts   []string
	kubeconfig string
}

// startFleet starts k clusters together in dir.
func (e *env) startFleet(ctx context.Context, dir string, k int) (*fleet, error) {
	f := &fleet{kubeconfig: filepath.Join(dir, "kubeconfig")}
	for i := range k {
		f.contexts = append(f.contexts, string(rune('a'+i)))
	}
	t := time.Now()
	sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var err error
	if f.clusters, err = localcluster.StartMany(sctx, e.clusterOptions(dir, false), f.contexts); err != nil {
		return nil, err
	}
	byName := map[string]*localcluster.Cluster{}
	for i, c := range f.clusters {
		byName[f.contexts[i]] = c
	}
	if err := localcluster.WriteMergedKubeconfig(f.kubeconfig, byName); err != nil {
		return nil, errors.Join(err, f.stop())
	}
	e.logf("%d clusters ready in %s in %s", k, time.Since(t).Round(100*time.Millisecond), dir)
	return f, nil
}

func (f *fleet) stop() error { return localcluster.StopAll(f.clusters) }

// fleetResult is the row of one podsync over several clusters.
type fleetResult struct {
	clusters, pods int // clusters, pods in each
	// podsync reads every cluster at once; kubectl is one `kubectl get
	// pods -A` per cluster, one after the other, each round summed.
	podsync, kubectl *cmdResult
}

// measureFleet starts cfg.clusters clusters of cfg.clusterPods pods and
// measures podsync over all their contexts at once against kubectl run
// on each in turn.
func (e *env) measureFleet(ctx context.Context, tmp string) (*fleetResult, error) {
	cfg := e.cfg
	f, err := e.startFleet(ctx, filepath.Join(tmp, "fleet"), cfg.clusters)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := f.stop(); err != nil {
			e.logf("stop the fleet: %v", err)
		}
	}()
	for _, c := range f.clusters {
		member := *e
		member.cluster, member.kubeconfig = c, c.Kubeconfig
		if err := member.stopControllers(); err != nil {
			return nil, err
		}
		l, err := newLoader(&member)
		if err != nil {
			return nil, err
		}
		if _, err := l.ensure(ctx, cfg.clusterPods); err != nil {
			return nil, fmt.Errorf("load %s: %w", c.Dir, err)
		}
	}
	fe := *e
	fe.kubeconfig, fe.apiMeter, fe.cluster = f.kubeconfig, nil, nil
	return fe.measureFleetCommands(ctx, f.contexts)
}

func (e *env) measureFleetCommands(ctx context.Context, contexts []string) (*fleetResult, error) {
	n := e.cfg.clusterPods
	list := strings.Join(contexts, ",")
	res := &fleetResult{
		clusters: len(contexts), pods: n,
		podsync: &cmdResult{cmd: command{id: "podsync-contexts", label: "`kubectl podsync --context " + list + " -A --once`",
			args: []string{"podsync", "--context", list, "-A", "--once"}, out: outTable}},
		kubectl: &cmdResult{cmd: command{id: "kubectl-contexts", out: outTable,
			label: fmt.Sprintf("`kubectl get pods -A --context X` for %s, one after the other (walls and CPU summed, the largest peak RSS)", list)}},
	}
	supported := true
	first := 0
	if e.cfg.warmup {
		first = -1 // an untimed round, dropped below
	}
	for round := first; round < e.cfg.runs; round++ {
		// Alternate which goes first, as the size rounds do.
		steps := []func() error{
			func() error { return e.fleetKubectl(ctx, contexts, res.kubectl) },
			func() error {
				if supported {
					supported = e.fleetPodsync(ctx, len(contexts), n, res.podsync)
				}
				return nil
			},
		}
		if round%2 != 0 {
			steps[0], steps[1] = steps[1], steps[0]
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return res, err
			}
		}
		if round < 0 {
			res.podsync.samples, res.kubectl.samples = nil, nil
		}
	}
	return res, nil
}

// fleetPodsync runs podsync over every context once and says whether it
// should run again. A build without several contexts exits 2 (a usage
// error) on the list: that, or any other failure, is what the report
// shows instead of numbers.
func (e *env) fleetPodsync(ctx context.Context, clusters, pods int, r *cmdResult) bool {
	s, err := e.measureOnce(ctx, r.cmd, clusters*pods)
	var x *exitError
	switch {
	case errors.As(err, &x) && x.code == 2:
		r.skipped = "not supported by this build (exit 2: " + firstLine(x.stderr) + ")"
	case err != nil:
		r.skipped = "failed: " + firstLine(err.Error())
	default:
		r.samples = append(r.samples, s)
		e.logf("  %d clusters: podsync wall %.2fs  cpu %.2fs  maxrss %.0f MiB  first row %s",
			clusters, s.wall.Seconds(), s.cpu.Seconds(), float64(s.maxRSS)/(1<<20), seconds(s.firstRow))
		return true
	}
	e.logf("  %s: %s", r.cmd.label, r.skipped)
	return false
}

// fleetKubectl runs `kubectl get pods -A` on each context in turn and adds
// one sample: walls and CPU summed, the largest peak RSS, the first row of
// the first cluster.
func (e *env) fleetKubectl(ctx context.Context, contexts []string, r *cmdResult) error {
	sum := sample{firstRow: -1, apiIdle: -1, apiPeak: -1}
	for i, name := range contexts {
		c := command{id: "kubectl", args: []string{"get", "pods", "-A", "--context", name}, out: outTable}
		s, err := e.measureOnce(ctx, c, e.cfg.clusterPods)
		if err != nil {
			return fmt.Errorf("context %s: %w", name, err)
		}
		sum.wall += s.wall
		sum.cpu += s.cpu
		sum.maxRSS = max(sum.maxRSS, s.maxRSS)
		if i == 0 {
			sum.firstRow = s.firstRow
		}
	}
	r.samples = append(r.samples, sum)
	e.logf("  %d clusters: kubectl one after the other: wall %.2fs  cpu %.2fs  maxrss %.0f MiB",
		len(contexts), sum.wall.Seconds(), sum.cpu.Seconds(), float64(sum.maxRSS)/(1<<20))
	return nil
}

func (r *report) writeFleet(b *strings.Builder) {
	f := r.fleet
	if f == nil {
		return
	}
	fmt.Fprintf(b, "#### %d clusters × %d pods\n\n", f.clusters, f.pods)
	b.WriteString("| command | wall s | CPU s | peak RSS MiB | first row s | wall vs kubectl | RSS vs kubectl |\n|---|---|---|---|---|---|---|\n")
	for _, c := range []*cmdResult{f.podsync, f.kubectl} {
		if !c.measured() {
			fmt.Fprintf(b, "| %s | %s | | | | | |\n", c.cmd.label, c.skipped)
			continue
		}
		vsW, vsR := "", ""
		if c == f.podsync && f.kubectl.measured() {
			vsW, vsR = ratio(c.wall().median, f.kubectl.wall().median), ratio(c.rss().median, f.kubectl.rss().median)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", c.cmd.label,
			spread(c.wall(), "%.2f"), spread(c.cpu(), "%.2f"), spread(c.rss(), "%.0f"), firstRowCell(c), vsW, vsR)
	}
	b.WriteString("\n")
}
