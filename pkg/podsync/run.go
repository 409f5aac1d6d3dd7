package podsync

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/controller"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/diagnose"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/output"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source"
)

// Run streams messages until the run ends: --once, --until met or failed,
// --timeout, a cancelled ctx (a SignalError or ErrTimeout cause), a
// reader of stdout that went away, or a cluster that cannot be used. It
// writes the summary, when one is due, before it returns.
func Run(ctx context.Context, cfg Config, clusters ...Cluster) Outcome {
	start := time.Now()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if cfg.Timeout > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, cfg.Timeout, ErrTimeout)
		defer stop()
	}
	s := newStream(ctx, cfg)
	s.multi = len(clusters) > 1
	for i, c := range clusters {
		w, err := newClusterRun(ctx, cancel, cfg, i, c, s)
		if err != nil {
			return Outcome{Verdict: Broken, Err: err}
		}
		s.clusters = append(s.clusters, w)
	}
	var wg sync.WaitGroup
	for _, w := range s.clusters {
		wg.Go(func() { _ = w.ctrl.Run(ctx) })
		wg.Go(func() {
			select {
			case <-w.ctrl.InitialDone():
			case <-ctx.Done():
				return
			}
			select {
			case s.initialDone <- w.index:
			case <-ctx.Done(): // the loop has ended already
			}
		})
		if cfg.Events && w.clients != nil {
			wg.Go(func() { s.watchEvents(ctx, w, start) })
		}
	}
	end := s.loop(ctx)
	took := time.Since(start)
	s.awaitDiagnoses(ctx, end)
	cancel(end.cause)
	wg.Wait()
	return s.finish(ctx, end, took)
}

// clusterRun is one cluster's part of a run: its controller (informer, queue,
// workers), its check, its connection state and its rollout lookups. The
// stream goroutine alone reads and changes it after newWatch.
type clusterRun struct {
	index    int
	name     string
	clients  *Clients
	ctrl     *controller.Controller
	eval     *check.Evaluator
	rollouts *rollouts
	// events counts the messages of each kind.
	events map[string]int
	// initial: the whole initial list has been delivered.
	initial bool
	// synced holds the SYNC messages until the initial list is complete,
	// when --sort-by orders them; later, the news that came meanwhile.
	synced, later []controller.Message
	// streamed holds the pods of the initial list printed from its pages,
	// before the informer had the whole list (see pages.go).
	streamed map[cache.ObjectName]*source.PodRow
	// diagnoser diagnoses pods in a failure state (nil: the run does not);
	// diag holds the diagnoses delivered.
	diagnoser *diagnose.Diagnoser
	diag      *diagnoses
	// join joins Events to the pods shown (--events).
	join *eventJoin
	// changed holds when each pod last changed, for the progress line.
	changed map[string]time.Time
}

func newClusterRun(ctx context.Context, fail context.CancelCauseFunc, cfg Config, i int, c Cluster, s *stream) (*clusterRun, error) {
	w := &clusterRun{index: i, name: c.Name, clients: c.Clients, events: map[string]int{}, eval: check.NewEvaluator(cfg.Check),
		join: newEventJoin(), changed: map[string]time.Time{}}
	src := c.Source
	if src == nil {
		conn := &connection{ctx: ctx, errOut: s.stderr, fail: fail, requestTimeout: cfg.RequestTimeout, listOnly: cfg.Once}
		built := podSource(cfg, c.Clients, conn)
		src = &built
	}
	if c.Clients != nil {
		// Without clients (a source given by a test) Deployments cannot be
		// looked up, so their pods are judged alone.
		w.rollouts = newRollouts(c.Clients.Kube.AppsV1(), cfg.MaxRetries, s.stderr, i, s.lookups)
		w.eval.ConfirmRollouts()
	}
	stream := cfg.SortBy == ""
	var observe func(*source.PodRowList)
	if stream {
		w.streamed = map[cache.ObjectName]*source.PodRow{}
		observe = s.pageObserver(ctx, i)
	}
	opts := controller.Options{
		ListerWatcher: src.ListerWatcher(observe),
		Deliver: func(ctx context.Context, msgs []controller.Message) error {
			select {
			case s.deliveries <- delivery{cluster: i, msgs: msgs}:
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		},
		Workers:    cfg.Workers,
		MaxRetries: cfg.MaxRetries,
		Resync:     cfg.Resync,
		// A streamed SYNC has been printed already: what was folded into
		// it must come as an UPDATE of its own (see pages.go).
		HideSync:          cfg.WatchOnly || stream,
		KeepManagedFields: cfg.KeepManagedFields,
		OnDrop: func(key cache.ObjectName, err error) {
			fmt.Fprintf(s.stderr, "error: pod %s: %s\n", key, check.OneLine(err.Error(), 0))
		},
	}
	w.setUpDiagnosis(ctx, cfg, c, s, &opts)
	ctrl, err := controller.New(opts)
	if err != nil {
		return nil, fmt.Errorf("pod controller: %w", err)
	}
	w.ctrl = ctrl
	return w, nil
}

// podSource builds the ListerWatcher's source: server-side tables for the
// table output, plain protobuf pods for every other output, narrowed to
// the named pods, retried while the server is unreachable.
func podSource(cfg Config, c *Clients, r source.Reporter) source.Source {
	filter := source.Filter{Namespace: cfg.Scope.Namespace, LabelSelector: cfg.Scope.LabelSelector,
		FieldSelector: cfg.Scope.FieldSelector, KeepManagedFields: cfg.KeepManagedFields,
		// --sort-by may name any field of the pod.
		Lean: cfg.SortBy == ""}
	if len(cfg.Scope.Names) == 1 {
		// One name can be matched by the server.
		filter.FieldSelector = joinSelectors(filter.FieldSelector, "metadata.name="+cfg.Scope.Names[0])
	}
	var src source.Source
	if cfg.Output.Shape() == output.Table {
		src = source.Tables(source.TableClients{List: c.Table, Watch: c.TableWatch}, filter, r)
	} else {
		src = source.Objects(c.Kube, c.KubeWatch, c.Table, filter, r)
	}
	if len(cfg.Scope.Names) > 1 {
		names := map[string]bool{}
		for _, n := range cfg.Scope.Names {
			names[n] = true
		}
		src = src.ByName(names)
	}
	return src.Retrying(source.Backoff())
}

func joinSelectors(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}
