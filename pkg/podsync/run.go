package podsync

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-podsync/kubectl-podsync/internal/retry"
	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/controller"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/diagnose"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/output"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// Run streams messages until the run ends: --once, --until met or failed,
// --timeout, a cancelled ctx (a SignalError or ErrTimeout cause), a
// reader of stdout that went away, or a cluster that cannot be used. It
// writes the summary, when one is due, before it returns.
func Run(ctx context.Context, cfg Config, clusters ...Cluster) Outcome {
	start := cfg.Started
	if start.IsZero() {
		start = time.Now()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if cfg.Timeout > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, cfg.Timeout, ErrTimeout)
		defer stop()
	}
	s := newStream(ctx, cfg, len(clusters) > 1)
	var unusable []unavailable
	for i, c := range clusters {
		if c.Unusable != nil {
			s.clusters = append(s.clusters, unusableClusterRun(ctx, cfg, i, c, s))
			unusable = append(unusable, unavailable{cluster: i, err: c.Unusable})
			continue
		}
		w, err := newClusterRun(ctx, cancel, cfg, i, c, s)
		if err != nil {
			return Outcome{Verdict: Broken, Err: err}
		}
		s.clusters = append(s.clusters, w)
	}
	for _, u := range unusable {
		if end, over := s.skip(u); over {
			return s.finish(ctx, end, time.Since(start))
		}
	}
	var wg sync.WaitGroup
	for _, w := range s.clusters {
		if w.ctrl == nil {
			continue // unusable
		}
		wg.Go(func() { w.run(w.ctx) })
		wg.Go(func() {
			select {
			case <-w.ctrl.InitialDone():
			case <-w.ctx.Done():
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
	stopped := make(chan struct{})
	go func() {
		wg.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(stopWait):
		// A request that does not heed its context (a credential plugin
		// that does not answer) holds a goroutine: the run ends without it.
	}
	out := s.finish(ctx, end, took)
	drainStdout(cfg, end)
	return out
}

// stopWait bounds the wait for a run's goroutines once it has ended.
const stopWait = 300 * time.Millisecond

// drainStdout writes out what waits for the reader of stdout: all of it for
// a reader that reads, nothing more once the reader has not taken a piece
// for a while (shorter when --timeout or a signal ended the run, which must
// end within a second).
func drainStdout(cfg Config, end ending) {
	if cfg.Detached == nil {
		return
	}
	idle := time.Second
	if end.verdict == Interrupted || errors.Is(end.cause, ErrTimeout) || end.timedOut {
		idle = 250 * time.Millisecond
	}
	_ = cfg.Detached.Drain(idle)
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
	// targets is nil unless the run is about workloads (Config.Targets).
	targets *targetRun
	// events counts the messages of each kind.
	events map[string]int
	// list is where the cluster's initial list stands.
	list initialList
	// ctx is the run's context, ended early for a cluster skipped as
	// unavailable (stop); unavailable then says why.
	ctx         context.Context
	stop        context.CancelCauseFunc
	unavailable error
	// conn is the pods' connection of a cluster in a run over several:
	// while it is lost, the cluster's check is not met.
	conn *connection
	// answer, unless nil (a source given by a test), bounds the wait for
	// the cluster's first answer; unanswered gives the cluster up then.
	answer     *firstAnswer
	unanswered func(error)
	// listed says whether the cluster's initial list is in.
	listed func() bool
	limit  time.Duration
	// limitNamed: the limit is --request-timeout's.
	limitNamed bool
	// label names the cluster in what is said about it, with several.
	label string
	// namespace is the one namespace whose Events the run watches ("" for
	// all): the pods', or, for targets in several namespaces, all.
	namespace string
	// diagnoser diagnoses pods in a failure state (nil: the run does not);
	// diag holds the diagnoses delivered.
	diagnoser *diagnose.Diagnoser
	diag      *diagnoses
	// join joins Events to the pods shown (--events).
	join *eventJoin
	// changed holds when each pod last changed, for the progress line.
	changed map[string]time.Time
	// judged holds, with a check, the state of each pod that the check
	// last judged: an explanation describes that state, not a newer one
	// the informer holds already.
	judged map[string]*wire.PodRow
}

func newClusterRun(ctx context.Context, fail context.CancelCauseFunc, cfg Config, i int, c Cluster, s *stream) (*clusterRun, error) {
	w := &clusterRun{index: i, name: c.Name, clients: c.Clients, events: map[string]int{}, eval: check.NewEvaluator(cfg.Check),
		join: newEventJoin(), changed: map[string]time.Time{},
		list: initialList{sortBy: cfg.SortBy, several: s.several, watchOnly: cfg.WatchOnly}}
	w.ctx, w.stop = context.WithCancelCause(ctx)
	if cfg.Check.Judges() {
		w.judged = map[string]*wire.PodRow{}
	}
	if s.several {
		w.label = c.Name
	}
	if err := w.watchTargets(ctx, fail, cfg, c, s); err != nil {
		return nil, err
	}
	w.namespace = eventNamespace(cfg, c, w.targets)
	src := c.Source
	if src == nil {
		src = w.podSource(ctx, fail, cfg, c, s)
	}
	if c.Clients != nil && w.targets == nil {
		// A target's own object says what a confirmation would.
		// Without clients (a source given by a test) Deployments cannot be
		// looked up, so their pods are judged alone.
		w.rollouts = newRollouts(c.Clients.Kube.AppsV1(), cfg.MaxRetries, s.stderr, i, s.lookups)
		w.rollouts.prefix = w.prefix()
		w.rollouts.once = cfg.Once
		w.eval.ConfirmRollouts()
		if err := w.watchRollouts(cfg, c); err != nil {
			return nil, err
		}
	}
	opts := w.controllerOptions(ctx, cfg, src, s)
	w.setUpDiagnosis(ctx, cfg, c, s, &opts)
	ctrl, err := controller.New(opts)
	if err != nil {
		return nil, fmt.Errorf("pod controller: %w", err)
	}
	w.ctrl = ctrl
	if w.targets != nil {
		w.targets.ctrl = ctrl
	}
	return w, nil
}

// watchTargets builds the informers of the cluster's targets, if any, and
// tells the evaluator about them.
func (w *clusterRun) watchTargets(ctx context.Context, fail context.CancelCauseFunc, cfg Config, c Cluster, s *stream) error {
	targets := c.Targets
	if targets == nil {
		targets = cfg.Targets
	}
	if len(targets) == 0 {
		return nil
	}
	t, err := newTargetRun(w.ctx, s.targetFail(ctx, cfg, w, fail), cfg, targets, w.index, c.Clients, s)
	if err != nil {
		return err
	}
	w.targets = t
	t.prefix, t.home = w.prefix(), podNamespace(cfg, c)
	if c.Clients != nil {
		sayUnmatchedRules(s.stderr, t.prefix, cfg.HealthRules, c.Clients.Kube.Discovery())
	}
	t.prepare(w.eval)
	return nil
}

// podSource builds the cluster's pod source on its connection, which
// reports failures and reconnections and, with several clusters, whether
// the cluster is reachable.
func (w *clusterRun) podSource(ctx context.Context, fail context.CancelCauseFunc, cfg Config, c Cluster, s *stream) *source.Source {
	w.answer, w.limit, w.limitNamed = newFirstAnswer(), answerLimit(cfg), cfg.RequestTimeout > 0
	conn := &connection{ctx: w.ctx, errOut: s.stderr, fail: fail, requestTimeout: cfg.RequestTimeout, listOnly: cfg.Once, name: w.label,
		answered: w.answer.mark}
	// A cluster that never answers is given up as one whose first list
	// failed: the run ends naming it, or goes on without it.
	w.unanswered = func(err error) { conn.Result("list", err) }
	w.listed = conn.hasListed
	if s.several && cfg.SkipUnavailable {
		conn.skip = s.skipper(ctx, w)
	}
	if s.several {
		// A context that loses its connection is not met until it is
		// back: the stream judges again at each change.
		conn.changed = s.connectionChanged
		w.conn = conn
	}
	var built source.Source
	switch {
	case c.Dial != nil:
		built = c.Dial(conn)
	case w.targets != nil:
		built = w.targets.podSource(w.ctx, cfg, c.Clients, conn).Retrying(retry.Backoff())
	default:
		built = podSource(cfg, c, conn)
	}
	if cfg.Once {
		built = built.ListOnly()
	}
	return &built
}

// controllerOptions are the pod controller's: its source, its delivery to
// the stream, and, when the initial list is printed page by page, the
// observer of its pages.
func (w *clusterRun) controllerOptions(ctx context.Context, cfg Config, src *source.Source, s *stream) controller.Options {
	stream := cfg.SortBy == ""
	var onPage func(*source.PodRowList)
	if stream {
		w.list.streamed = map[cache.ObjectName]*wire.PodRow{}
		onPage = s.pageObserver(ctx, w.index)
		if w.targets != nil {
			onPage = w.targets.keptPages(onPage)
		}
	}
	return controller.Options{
		ListerWatcher: src.ListerWatcher(onPage),
		Deliver: func(ctx context.Context, msgs []message.Message) error {
			select {
			case s.deliveries <- delivery{cluster: w.index, msgs: msgs}:
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
		Keep:              w.targets.keeper(),
		OnDrop: func(key cache.ObjectName, err error) {
			fmt.Fprintf(s.stderr, "error: %spod %s: %s\n", w.prefix(), key, text.OneLine(err.Error(), 0))
		},
	}
}

// targetFail is what a cluster's workload watches call when the cluster
// cannot be used: with several clusters, the error names the cluster, and
// with SkipUnavailable a cluster whose pods were never listed (it failed
// at start) is skipped rather than ending the run.
func (s *stream) targetFail(ctx context.Context, cfg Config, w *clusterRun, fail context.CancelCauseFunc) context.CancelCauseFunc {
	if !s.several {
		return fail
	}
	skip := s.skipper(ctx, w)
	return func(err error) {
		if cfg.SkipUnavailable && !w.conn.hasListed() {
			skip(err)
			return
		}
		if !errors.As(err, new(*contextError)) {
			err = &contextError{name: w.name, err: err}
		}
		fail(err)
	}
}

// unusableClusterRun is the part of a run of a cluster that cannot be
// used: nothing runs, and the check counts it as failed.
func unusableClusterRun(ctx context.Context, cfg Config, i int, c Cluster, s *stream) *clusterRun {
	w := &clusterRun{index: i, name: c.Name, events: map[string]int{}, eval: check.NewEvaluator(cfg.Check),
		join: newEventJoin(), changed: map[string]time.Time{},
		list: initialList{sortBy: cfg.SortBy, several: s.several, watchOnly: cfg.WatchOnly}}
	w.ctx, w.stop = context.WithCancelCause(ctx)
	w.stop(c.Unusable)
	if s.several {
		w.label = c.Name
	}
	return w
}

// run runs the cluster's workload informers, if any, and once their first
// lists are in (so the targets' selectors are known), its pod controller.
func (w *clusterRun) run(ctx context.Context) {
	if w.answer != nil && w.clients != nil {
		ctx = w.answer.traced(ctx)
		go w.answer.await(ctx, w.limit, w.clients.Server, w.limitNamed, w.unanswered)
		go w.answer.awaitList(ctx, w.limit, w.clients.Server, w.limitNamed, w.listed, w.ctrl.InitialDone(), w.unanswered)
	}
	var informers sync.WaitGroup
	defer informers.Wait()
	if w.targets.start(ctx, &informers) {
		_ = w.ctrl.Run(ctx)
	}
}

// podSource builds the ListerWatcher's source: server-side tables for the
// table output, plain protobuf pods for every other output, narrowed to
// the named pods, retried while the server is unreachable.
func podSource(cfg Config, cluster Cluster, r source.Reporter) source.Source {
	c := cluster.Clients
	filter := source.Filter{Namespace: podNamespace(cfg, cluster), LabelSelector: cfg.Scope.LabelSelector,
		FieldSelector: cfg.Scope.FieldSelector, KeepManagedFields: cfg.KeepManagedFields,
		// --sort-by may name any field of the pod.
		Lean: cfg.SortBy == ""}
	if len(cfg.Scope.Names) == 1 {
		// One name can be matched by the server.
		filter.FieldSelector = joinSelectors(filter.FieldSelector, "metadata.name="+cfg.Scope.Names[0])
	}
	src := podsIn(cfg, c, filter, r)
	if len(cfg.Scope.Names) > 1 {
		names := map[string]bool{}
		for _, n := range cfg.Scope.Names {
			names[n] = true
		}
		src = src.ByName(names)
	}
	return src.Retrying(retry.Backoff())
}

// podsIn is the pods the filter selects: server-side tables for the table
// output, plain protobuf pods for every other output.
func podsIn(cfg Config, c *Clients, filter source.Filter, r source.Reporter) source.Source {
	if cfg.Output.Shape() == output.Table {
		return source.Tables(source.TableClients{List: c.Table, Watch: c.TableWatch}, filter, r)
	}
	src := source.Objects(c.Kube, c.KubeWatch, c.Table, c.TableWatch, filter, r)
	// A streaming list is a watch, which no client timeout may cut: its
	// first answer could not be bounded by --request-timeout as a list's is.
	src.StreamsLists = src.StreamsLists && cfg.RequestTimeout == 0
	return src
}

func joinSelectors(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}

// watchRollouts lets the cluster's Deployments and ReplicaSets answer the
// confirmations of a check that makes them.
func (w *clusterRun) watchRollouts(cfg Config, c Cluster) error {
	if !w.eval.ConfirmsRollouts() {
		return nil
	}
	cache, err := watchRollouts(w.ctx, c.Clients.Kube, podNamespace(cfg, c), func() { w.rollouts.changed(w.ctx) })
	w.rollouts.cache = cache
	return err
}

// eventNamespace is where a cluster's Events are watched: the namespace of
// its pods, or every namespace when its targets are in several.
func eventNamespace(cfg Config, c Cluster, t *targetRun) string {
	if t == nil {
		return podNamespace(cfg, c)
	}
	if nss := t.podNamespaces(); len(nss) == 1 {
		return nss[0]
	}
	return ""
}

// podNamespace is the namespace whose pods a cluster watches: the
// cluster's own default, unless -A; "" for all.
func podNamespace(cfg Config, c Cluster) string {
	if c.Namespace != "" && !cfg.Scope.AllNamespaces {
		return c.Namespace
	}
	return cfg.Scope.Namespace
}
