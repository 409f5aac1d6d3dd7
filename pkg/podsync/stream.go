package podsync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/ghactions"
	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/output"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// stream is the one goroutine that owns stdout: it judges each message,
// then prints it, and decides when the run is over.
type stream struct {
	// ctx is the run's context: a wait for the reader of stdout ends with it.
	ctx      context.Context
	cfg      Config
	writer   *output.Writer
	stderr   *lockedWriter
	clusters []*clusterRun
	// several: the run watches more than one cluster.
	several bool
	// identity is the pod feed hands the check when the check reads
	// only its metadata, reused (see identityOf).
	identity corev1.Pod

	deliveries  chan delivery
	pages       chan page
	initialDone chan int
	lookups     chan rolloutResult
	unavailable chan unavailable
	workloads   chan workloadEvent
	// connections fires when a cluster's connection is lost or back.
	connections chan struct{}
	// stdoutGone closes when the reader of stdout has gone; outClosed
	// says it has, so a check judges on without printing.
	stdoutGone <-chan struct{}
	outClosed  bool
	// graceOver: a failed check stopped waiting for diagnoses.
	graceOver bool
	progress  *progress
	// expiry fires when a failure that --fail-after holds back has held
	// long enough, at expiryAt (see armExpiry).
	expiry   *time.Timer
	expiryAt time.Time
	// stable fires when the --stable-for window that opened at
	// stableSince is over.
	stable      *time.Timer
	stableSince time.Time
	// probes hears what the looks at pods' Events found for containers
	// past their probe budget; probeAlarm fires when the next comes past
	// it (see askProbes).
	probes     chan probeAnswer
	probeAlarm alarm
	// nodes carries the answers of the nodes' lookups (nodes.go).
	nodes chan nodeAnswer
}

// delivery is one key's messages from a worker of clusters[cluster].
type delivery struct {
	cluster int
	msgs    []message.Message
}

// ending is why the loop stopped.
type ending struct {
	verdict Verdict
	// cause is the error of a Broken run, or the SignalError of an
	// Interrupted one.
	cause error
	// summary: the run ends with a summary on stderr.
	summary bool
	// timedOut: --timeout ended the run.
	timedOut bool
}

func newStream(ctx context.Context, cfg Config, several bool) *stream {
	return &stream{
		ctx:         ctx,
		cfg:         cfg,
		writer:      cfg.Output,
		stderr:      &lockedWriter{w: errOut(cfg)},
		several:     several,
		deliveries:  make(chan delivery),
		pages:       make(chan page),
		initialDone: make(chan int),
		lookups:     make(chan rolloutResult),
		unavailable: make(chan unavailable),
		workloads:   make(chan workloadEvent),
		connections: make(chan struct{}, 1),
		probes:      make(chan probeAnswer),
		nodes:       make(chan nodeAnswer),
		stdoutGone:  output.WatchClosed(ctx, cfg.Stdout),
		progress:    newProgress(cfg),
	}
}

func (s *stream) loop(ctx context.Context) ending {
	// One cluster's initial list is aligned in blocks (its pages, then
	// the rest at initialListDone); with several, only each page is, so
	// that one cluster's lines never wait for another's list.
	s.writer.SetBuffered(!s.several)
	for {
		select {
		case <-ctx.Done():
			return s.fromCause(context.Cause(ctx))
		case <-s.stdoutGone:
			s.stdoutGone = nil
			if end, over := s.outputGone(); over {
				return end
			}
		case i := <-s.initialDone:
			if end, over := s.initialListDone(s.clusters[i]); over {
				return end
			}
		case u := <-s.unavailable:
			if end, over := s.skip(u); over {
				return end
			}
		case res := <-s.lookups:
			s.clusters[res.cluster].rollouts.apply(s.clusters[res.cluster].eval, res)
		case ev := <-s.workloads:
			s.clusters[ev.cluster].targets.update(ev, s.clusters[ev.cluster].eval, s.stderr)
		case p := <-s.pages:
			if end, over := s.handlePage(s.clusters[p.cluster], p); over {
				return end
			}
		case d := <-s.deliveries:
			c := s.clusters[d.cluster]
			if end, over := s.handle(c, c.list.unstream(d.msgs)); over {
				return end
			}
		case <-s.progress.due():
			s.sayProgress()
		case <-s.connections:
		case <-s.stableDue():
		case <-s.expiryDue():
			s.expiryAt = time.Time{}
			for _, w := range s.clusters {
				w.eval.Expire()
			}
		case <-s.probeAlarm.due():
			s.askProbes()
		case a := <-s.probes:
			s.clusters[a.cluster].eval.ProbeAnswer(a.ask, a.message, a.err)
		case a := <-s.nodes:
			w := s.clusters[a.cluster]
			w.targets.nodeAnswered(a, w.eval)
		}
		if end, over := s.judge(ctx); over {
			return end
		}
		s.armExpiry()
		s.armProbes()
	}
}

// armExpiry sets the timer for the first failure --fail-after holds back:
// it must fail the check when its time comes even if no message does.
func (s *stream) armExpiry() {
	if s.cfg.Check.FailAfter <= 0 {
		return
	}
	var next time.Time
	for _, w := range s.clusters {
		if at, ok := w.eval.NextExpiry(); ok && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	switch {
	case next.Equal(s.expiryAt):
		return
	case s.expiry == nil && !next.IsZero():
		s.expiry = time.NewTimer(time.Until(next))
	case s.expiry != nil:
		s.expiry.Stop()
		if !next.IsZero() {
			s.expiry.Reset(time.Until(next))
		}
	}
	s.expiryAt = next
}

// expiryDue is the channel of the --fail-after timer, nil when none is set.
func (s *stream) expiryDue() <-chan time.Time {
	if s.expiry == nil || s.expiryAt.IsZero() {
		return nil
	}
	return s.expiry.C
}

// initialListDone prints the initial list of w as one block, sorted when
// asked, then lets each later line out as it comes.
func (s *stream) initialListDone(w *clusterRun) (ending, bool) {
	for _, m := range w.list.unlisted() {
		if end, over := s.handle(w, []message.Message{m}); over {
			return end, true
		}
	}
	w.list.done = true
	s.writer.SetBuffered(true)
	if end, over := s.printHeld(w); over {
		return end, true
	}
	s.writer.SetBuffered(false)
	return s.flush()
}

// releaseHeld prints what is held back for initial lists that a failure
// cuts short: each pod judged is shown, sorted as far as it came. The
// verdict stands whatever the printing meets.
func (s *stream) releaseHeld() {
	for _, w := range s.clusters {
		if w.list.done || len(w.list.held) == 0 {
			continue
		}
		s.writer.SetBuffered(true)
		_, _ = s.printHeld(w)
		_, _ = s.flush()
	}
}

// printHeld prints the messages held back for w's initial list (see
// initialList.takeHeld).
func (s *stream) printHeld(w *clusterRun) (ending, bool) {
	held, err := w.list.takeHeld()
	if err != nil {
		return ending{verdict: Broken, cause: UsageError{Err: err}}, true
	}
	for _, m := range held {
		if end, over := s.print(m); over {
			return end, true
		}
	}
	return ending{}, false
}

// handle judges each message of one key, then prints it: the verdict never
// waits on, nor depends on, printing.
func (s *stream) handle(w *clusterRun, msgs []message.Message) (ending, bool) {
	if len(msgs) == 1 && !msgs[0].Type.PodState() {
		return s.news(w, msgs[0])
	}
	if s.cfg.Once {
		if w.list.done {
			return ending{}, false // --once judges the initial list only
		}
		msgs = listedState(msgs)
	}
	for _, m := range msgs {
		m.Context = w.name
		if w.list.holds(m) {
			s.feed(w, m, m.Row)
			w.list.held = append(w.list.held, m)
		} else {
			cached := m.Row
			m = s.unpacked(m)
			s.feed(w, m, cached)
			if end, over := s.print(m); over {
				return end, true
			}
		}
		if end, over := s.podNews(w, m); over {
			return end, true
		}
	}
	return ending{}, false
}

// listedState keeps what --once shows: the list's state. A change that
// came in by the watch before the list was all judged (an UPDATE of a
// listed pod, an ADD of a new one) is after that state, as in
// `kubectl get pods`.
func listedState(msgs []message.Message) []message.Message {
	return slices.DeleteFunc(msgs, func(m message.Message) bool {
		return m.Type == message.Update || m.Type == message.Add
	})
}

// unpacked is m with its packed row decoded once, when both the check and
// the printer read the whole of it: on a packed row each would decode it.
// Only a printed message is unpacked, so rows held for later or kept for
// an explanation stay packed.
func (s *stream) unpacked(m message.Message) message.Message {
	if m.Type == message.Gone || s.outClosed || !s.writer.PrintsWhole(m) {
		return m
	}
	if row, err := m.Row.Unpacked(); err == nil {
		m.Row = row
	}
	return m
}

// feed counts the message and tells the check about it; cached is the
// informer's row of the message, which an explanation may remember.
func (s *stream) feed(w *clusterRun, m message.Message, cached *wire.PodRow) {
	w.events[m.Type.String()]++
	w.targets.trackOwners(m)
	key := m.Key.String()
	if m.Type != message.Gone {
		// The state that failed the check is the one explained: a failure
		// is final, later states of that pod are not.
		remember := w.judged != nil && !failedOn(w.eval, key)
		status := wire.Cell(m.Row, "Status")
		initial := m.Type == message.Sync
		switch {
		case status == "" && !w.eval.Judges():
			// The cached row, not the one decoded for the printer.
			w.eval.ObserveLater(key, s.identityOf(m.Row), cached.Pod, initial)
		case w.eval.ReadsPod(status):
			w.eval.ObserveStatus(key, m.Row.Pod(), status, initial)
		default:
			w.eval.ObserveStatus(key, s.identityOf(m.Row), status, initial)
		}
		if remember {
			w.judged[key] = cached
		}
		s.nameLeftBehind(w)
		return
	}
	if m.Row == nil {
		fmt.Fprintf(s.stderr, "warning: %spod %s was deleted while the watch was down; its last state is not known\n", w.prefix(), key)
	}
	delete(w.judged, key)
	w.eval.Forget(key)
}

// nameLeftBehind says once, for each pod that has just been found left
// behind by the controller that replaces it (evicted, shut down with its
// node), that it is not judged.
func (s *stream) nameLeftBehind(w *clusterRun) {
	for _, lb := range w.eval.TakeLeftBehind() {
		fmt.Fprintf(s.stderr, "podsync: %s%s\n", w.prefix(), output.LeftBehindNote(lb))
	}
}

// identityOf is a pod holding only row's metadata, for a check that
// reads nothing else and keeps nothing of it: one pod reused for every
// message, where a new one (1,280 bytes before its metadata) was a tenth
// of the CPU of `-o json` at 50,000 pods.
func (s *stream) identityOf(row *wire.PodRow) *corev1.Pod {
	s.identity.ObjectMeta = *row.Meta()
	return &s.identity
}

// failedOn reports whether the pod of key has failed the check.
func failedOn(e *check.Evaluator, key string) bool {
	v := e.Verdict()
	return v.State == check.Failed && v.Failure.Key == key
}

// print writes one message. A message the printer cannot format (a
// template that fails on this pod) is reported on stderr and the stream
// goes on; stdout that cannot be written ends the output.
func (s *stream) print(m message.Message) (ending, bool) {
	if s.outClosed {
		return ending{}, false
	}
	err := s.writer.Write(m)
	var we *output.WriteError
	switch {
	case err == nil:
		s.progress.printed()
		return ending{}, false
	case errors.As(err, &we):
		return s.writeFailed(we)
	}
	fmt.Fprintf(s.stderr, "error: %s\n", text.OneLine(err.Error(), 0))
	return ending{}, false
}

func (s *stream) flush() (ending, bool) {
	if s.outClosed {
		return ending{}, false
	}
	var we *output.WriteError
	if err := s.writer.Flush(); errors.As(err, &we) {
		return s.writeFailed(we)
	}
	return ending{}, false
}

// endOutput flushes the output and ends what it left open (see
// output.Writer.End) before the summary.
func (s *stream) endOutput() {
	if !s.outClosed {
		_ = s.writer.End()
	}
}

// writeFailed ends the output: a reader that went away (`| head -1`) ends
// it quietly; any other failure to write ends the run with an error.
func (s *stream) writeFailed(we *output.WriteError) (ending, bool) {
	if errors.Is(we, output.ErrBackedUp) {
		return s.backedUp()
	}
	if errors.Is(we, syscall.EPIPE) {
		return s.outputGone()
	}
	return ending{verdict: Broken, cause: fmt.Errorf("write output: %w", we.Err)}, true
}

// connectionChanged wakes the stream to judge again: a cluster whose
// connection is lost is not met until it is back.
func (s *stream) connectionChanged() {
	select {
	case s.connections <- struct{}{}:
	default:
	}
}

// backedUp handles a reader of stdout that does not read what was printed
// (a full pipe). A check stops printing and goes on judging: its verdict
// never waits on a reader. A plain stream waits for the reader, as a
// blocked write would, but ends as soon as the run does (--timeout, a
// signal) or the reader goes away.
func (s *stream) backedUp() (ending, bool) {
	if s.cfg.Check.Judges() {
		s.outClosed = true
		fmt.Fprintln(s.stderr, "warning: stdout is not being read: printing stops, the check goes on")
		return ending{}, false
	}
	var room <-chan struct{}
	if s.cfg.Detached != nil {
		room = s.cfg.Detached.Room()
	}
	for {
		select {
		case <-s.ctx.Done():
			return s.fromCause(context.Cause(s.ctx)), true
		case <-s.stdoutGone:
			s.stdoutGone = nil
			return s.outputGone()
		case <-room:
		}
		var we *output.WriteError
		err := s.writer.Flush()
		switch {
		case err == nil:
			return ending{}, false
		case !errors.As(err, &we):
			return ending{verdict: Broken, cause: fmt.Errorf("write output: %w", err)}, true
		case !errors.Is(we, output.ErrBackedUp):
			return s.writeFailed(we)
		}
	}
}

// outputGone handles a reader of stdout that went away. A plain stream has
// done its job: the reader asked for no more, so it ends quietly with 0. A
// check goes on judging without printing and exits with its verdict.
func (s *stream) outputGone() (ending, bool) {
	s.outClosed = true
	if s.cfg.Check.Judges() {
		return ending{}, false
	}
	return ending{verdict: Done}, true
}

func (s *stream) allInitial() bool {
	for _, w := range s.clusters {
		if !w.list.done {
			return false
		}
	}
	return true
}

// judge decides whether the run is over. A failure in any cluster ends it
// at once, except with --once, which judges the whole initial lists; the
// check is met only once every cluster's initial list has been seen and
// every cluster meets it. When only Deployments not yet confirmed hold a
// cluster back, they are looked up; --once waits for those answers.
func (s *stream) judge(ctx context.Context) (ending, bool) {
	all := s.allInitial()
	if !s.stableSince.IsZero() && s.state() == check.Pending {
		for _, w := range s.clusters {
			w.eval.Unsteady()
		}
	}
	// A target that failed by its own rule (a Job already failed at the
	// start) waits for the pods' initial lists, so the summary explains them.
	if s.state() == check.Failed && (all || !s.cfg.Once && !s.targetFailed()) {
		s.releaseHeld()
		return ending{verdict: Failed, summary: true}, true
	}
	if !all {
		return ending{}, false
	}
	if s.state() == check.Met {
		if !s.stableOver() {
			return ending{}, false
		}
		return ending{verdict: Met, summary: true}, true
	}
	waiting, answered := s.confirmRollouts(ctx)
	if answered {
		// What the answers changed is judged now, not on the next event.
		return s.judge(ctx)
	}
	if !s.cfg.Once || waiting {
		return ending{}, false
	}
	return s.settled(), true
}

// confirmRollouts asks about the Deployments that alone hold a cluster's
// check back: each when it comes to, and again after each answer that
// leaves it so (with --once, only after a failure). It says whether
// lookups are still out, and whether answers came at once.
func (s *stream) confirmRollouts(ctx context.Context) (waiting, answered bool) {
	for _, w := range s.clusters {
		if v := w.eval.Verdict(); v.WaitsOnRollout() {
			w.rollouts.hold()
			for _, res := range w.rollouts.ask(ctx, w.eval.TakeUnconfirmed()) {
				w.rollouts.apply(w.eval, res)
				answered = true
			}
			w.rollouts.release()
			waiting = waiting || w.rollouts.busy()
		}
	}
	return waiting, answered
}

// state combines the clusters' checks: failed when one failed, met when
// all met. A cluster skipped as unavailable is never met: once every other
// is met on its whole list, the check has failed.
func (s *stream) state() check.State {
	states := make([]clusterState, 0, len(s.clusters))
	for _, w := range s.clusters {
		st := clusterState{skipped: w.unavailable != nil}
		if !st.skipped {
			st.state = w.eval.Verdict().State
			_, st.lost = w.conn.lostSince()
		}
		states = append(states, st)
	}
	return verdictOver(states, s.allInitial)
}

// clusterState is what the verdict over several clusters reads of one.
type clusterState struct {
	// state is its evaluator's verdict.
	state check.State
	// skipped: it was given up as unavailable; lost: it is disconnected.
	skipped, lost bool
}

// verdictOver is the check over every cluster: failed as soon as one
// fails; met only when every cluster that is not skipped is met and
// connected (a lost cluster's last known state is no verdict); a skipped
// cluster fails a check that would be met otherwise, once every initial
// list is in (allInitial, asked only then).
func verdictOver(clusters []clusterState, allInitial func() bool) check.State {
	met, skipped := true, false
	for _, c := range clusters {
		switch {
		case c.skipped:
			skipped = true
		case c.state == check.Failed:
			return check.Failed
		case c.state == check.Pending || c.lost:
			met = false
		}
	}
	switch {
	case !met, skipped && !allInitial():
		return check.Pending
	case skipped:
		return check.Failed
	}
	return check.Met
}

// settled is the ending of a run that stops now, at --timeout or on the
// --once state: a check is met, failed or not met; a plain stream is done.
func (s *stream) settled() ending {
	switch {
	case s.state() == check.Failed, s.cfg.Check.Judges() && s.skipped() > 0:
		return ending{verdict: Failed, summary: true}
	case len(s.cfg.Check.Conditions) == 0:
		return ending{verdict: Done}
	case s.state() == check.Met && !s.stableShort():
		return ending{verdict: Met, summary: true}
	}
	return ending{verdict: NotMet, summary: true}
}

// fromCause turns the reason the context ended into an ending.
func (s *stream) fromCause(cause error) ending {
	var sig SignalError
	switch {
	case errors.As(cause, &sig):
		return ending{verdict: Interrupted, cause: cause, summary: true}
	case errors.Is(cause, ErrTimeout):
		end := s.settled()
		end.summary, end.timedOut = true, true
		return end
	}
	return ending{verdict: Broken, cause: cause}
}

// finish prints the summary when one is due and returns the outcome.
func (s *stream) finish(ctx context.Context, end ending, took time.Duration) Outcome {
	// The run's context has ended, so lookups still running stop now,
	// unless a request does not heed it (a credential plugin that does
	// not answer): the run does not wait for those.
	looked := make(chan struct{})
	go func() {
		for _, w := range s.clusters {
			w.rollouts.wait()
		}
		close(looked)
	}()
	select {
	case <-looked:
	case <-time.After(stopWait):
	}
	out := Outcome{Verdict: end.verdict, Err: end.cause}
	var sig SignalError
	if errors.As(end.cause, &sig) {
		out.Signal, out.Err = sig.Signal, nil
	}
	if !end.summary {
		s.endOutput()
		s.sayNoneFound(out)
		return out
	}
	if s.several {
		// A cluster whose initial list was not complete yet.
		for _, w := range s.clusters {
			s.printHeld(w)
		}
	}
	s.endOutput()
	s.summary(ctx, out, took)
	return out
}

// sayNoneFound says on stderr that a --once run found no pods, as
// `kubectl get pods` does, so that an empty answer is told from no answer.
func (s *stream) sayNoneFound(out Outcome) {
	if !s.cfg.Once || out.Verdict != Done || len(s.cfg.Targets) > 0 {
		return
	}
	namespace := s.clusters[0].namespace
	for _, w := range s.clusters {
		if w.unavailable != nil || w.events[message.Sync.String()] > 0 {
			return
		}
		if w.namespace != namespace {
			namespace = ""
		}
	}
	if namespace == "" {
		fmt.Fprintln(s.stderr, "No resources found")
		return
	}
	fmt.Fprintf(s.stderr, "No resources found in %s namespace.\n", namespace)
}

// lockedWriter lets workers report dropped keys while the stream writes.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// writeRaw writes text that holds podsync's own workflow commands, past
// the DefusedWriter that every other stderr line goes through.
func (l *lockedWriter) writeRaw(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.w
	if d, ok := w.(*ghactions.DefusedWriter); ok {
		w = d.Raw
	}
	_, _ = io.WriteString(w, s)
}
