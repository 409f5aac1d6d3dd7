package podsync_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/source"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// sim is a small in-memory API server for pods: every write gets the next
// resourceVersion and goes to an event log; a list answers the current
// state; a watch sends the log from a resourceVersion on, or, once that
// part of the log is compacted away, an Expired error, as kube-apiserver
// does. Tests cut watches (the reflector resumes them) and compact the log
// (the reflector must relist). Each pod carries two labels that every
// output format can show: inc, which incarnation of its name it is, and
// rv, the resourceVersion of the write that made this state.
type sim struct {
	table bool // rows carry table cells
	// pageSize > 0 hands the run each list in pages of this many pods, as
	// it would see them arrive (source.Call.ObservePage).
	pageSize int
	// failFirstList makes the first list fail after its first page; the
	// reflector lists again after its back-off.
	failFirstList bool
	// afterList, when set, runs once a list is read and before it is
	// answered: its writes reach the run by the watch that follows.
	afterList func()
	// production hands out rows as the run's own sources decode them: lean
	// for the table, packed for the outputs that print the whole pod.
	production bool
	// reporter, when set, hears the result of each list and watch, as the
	// run's connection hears a built source's (see podsync.Cluster.Dial).
	reporter source.Reporter

	mu sync.Mutex
	// down: the cluster cannot be reached; every list and watch is refused.
	down      bool
	rv        int64
	pods      map[string]*corev1.Pod // by namespace/name
	log       []simEvent
	compacted int64 // events at or below this resourceVersion are gone
	watchers  map[*simWatcher]bool
	lists     int
	listed    chan struct{} // closed by the first list
	listedOK  bool          // a list has succeeded
	// syncable holds, per key, the incarnations that the lists up to the
	// first successful one showed: the pods a run may print as SYNC.
	syncable map[string]map[int]bool
	// initialRV holds, per key, "inc/rv" of the first list that succeeded.
	initialRV map[string]string
}

type simEvent struct {
	rv  int64
	typ watch.EventType
	pod *corev1.Pod
}

func newSim(table bool) *sim {
	return &sim{table: table, pods: map[string]*corev1.Pod{}, watchers: map[*simWatcher]bool{}, listed: make(chan struct{}),
		syncable: map[string]map[int]bool{}, initialRV: map[string]string{}}
}

var simColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name"},
	{Name: "Ready", Type: "string"},
	{Name: "Status", Type: "string"},
	{Name: "Restarts", Type: "string"},
	{Name: "Age", Type: "string"},
	{Name: "IP", Type: "string", Priority: 1},
	{Name: "Node", Type: "string", Priority: 1},
	{Name: "Nominated Node", Type: "string", Priority: 1},
	{Name: "Readiness Gates", Type: "string", Priority: 1},
}

// source is the sim as a pod source for the run.
func (s *sim) source() *source.Source {
	return &source.Source{List: s.list, Watch: s.watch}
}

// row hands out a copy, as a client decodes its own: the informer's
// transform changes what it is given.
func (s *sim) row(p *corev1.Pod) *wire.PodRow {
	p = p.DeepCopy()
	r := wire.RowOf(p)
	if s.table {
		r.Columns = simColumns
		r.Cells = []interface{}{p.Name, readyCell(p), statusCell(p), "0", "1m", "<none>", "node-1", "<none>", "<none>"}
	}
	switch {
	case !s.production:
	case s.table:
		wire.Lean(r)
	default:
		if err := wire.Pack(r, false); err != nil {
			panic(fmt.Sprintf("pack pod %s/%s: %v", p.Namespace, p.Name, err))
		}
	}
	return r
}

// refused is what a request to a cluster that is down meets.
var refused = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}

func (s *sim) report(verb string, err error) {
	if s.reporter != nil {
		s.reporter.Result(verb, err)
	}
}

func (s *sim) isDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down
}

// disconnect takes the cluster off the network: open watches end and
// every request is refused until reconnect.
func (s *sim) disconnect() {
	s.mu.Lock()
	s.down = true
	s.mu.Unlock()
	s.cut()
}

func (s *sim) reconnect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = false
}

func (s *sim) list(ctx context.Context, opts metav1.ListOptions, call source.Call) (*source.PodRowList, error) {
	if s.isDown() {
		err := fmt.Errorf("list pods: %w", refused)
		s.report("list", err)
		return nil, err
	}
	out, err := s.listUp(ctx, opts, call)
	s.report("list", err)
	return out, err
}

func (s *sim) listUp(ctx context.Context, _ metav1.ListOptions, call source.Call) (*source.PodRowList, error) {
	out, pages := s.snapshot()
	for i, p := range pages {
		call.ObservePage(p)
		if i == 0 && s.failFirstList && s.lists == 1 && len(pages) > 1 {
			return nil, apierrors.NewServiceUnavailable("the first list fails half-way")
		}
	}
	if s.afterList != nil {
		s.afterList()
	}
	s.mu.Lock()
	if !s.listedOK {
		s.listedOK = true
		for _, row := range out.Items {
			s.initialRV[row.Meta().Namespace+"/"+row.Meta().Name] = row.Meta().Labels["inc"] + "/" + row.Meta().Labels["rv"]
		}
	}
	s.mu.Unlock()
	return out, nil
}

// snapshot reads the current state as a list and as its pages, and notes
// which incarnations a run may print as SYNC.
func (s *sim) snapshot() (*source.PodRowList, []*source.PodRowList) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := slices.Sorted(mapKeys(s.pods))
	out := &source.PodRowList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatInt(s.rv, 10)}}
	for _, k := range keys {
		row := s.row(s.pods[k])
		out.Items = append(out.Items, *row)
		if !s.listedOK {
			if s.syncable[k] == nil {
				s.syncable[k] = map[int]bool{}
			}
			inc, _ := strconv.Atoi(row.Meta().Labels["inc"])
			s.syncable[k][inc] = true
		}
	}
	s.lists++
	if s.lists == 1 {
		close(s.listed)
	}
	var pages []*source.PodRowList
	for from := 0; s.pageSize > 0 && from < len(out.Items); from += s.pageSize {
		p := &source.PodRowList{ListMeta: out.ListMeta, Items: out.Items[from:min(from+s.pageSize, len(out.Items))]}
		if from+s.pageSize < len(out.Items) {
			p.Continue = "more"
		}
		pages = append(pages, p)
	}
	return out, pages
}

// maySync reports whether a run may print key's incarnation inc as SYNC,
// and the state ("inc/rv") the first successful list showed of key.
func (s *sim) maySync(key string, inc int) (bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.syncable[key][inc], s.initialRV[key]
}

func (s *sim) watch(_ context.Context, opts metav1.ListOptions, _ source.Call) (watch.Interface, error) {
	from, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
	if err != nil {
		return nil, apierrors.NewBadRequest("bad resourceVersion " + opts.ResourceVersion)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		err := fmt.Errorf("watch pods: %w", refused)
		s.report("watch", err)
		return nil, err
	}
	defer s.report("watch", nil)
	w := newSimWatcher(from)
	if from < s.compacted {
		status := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, s.compacted)).ErrStatus
		w.push(watch.Event{Type: watch.Error, Object: &status})
		w.closeAfterQueue()
		return w, nil
	}
	for _, ev := range s.log {
		if ev.rv > from {
			w.push(watch.Event{Type: ev.typ, Object: s.row(ev.pod)})
		}
	}
	s.watchers[w] = true
	return w, nil
}

// write records a change of key and sends it to the watchers.
func (s *sim) writeLocked(typ watch.EventType, p *corev1.Pod) {
	s.rv++
	p.ResourceVersion = strconv.FormatInt(s.rv, 10)
	s.log = append(s.log, simEvent{rv: s.rv, typ: typ, pod: p})
	for w := range s.watchers {
		if w.stopped() {
			delete(s.watchers, w)
			continue
		}
		w.push(watch.Event{Type: typ, Object: s.row(p)})
	}
}

// put creates or replaces a pod; its rv label is the new resourceVersion.
func (s *sim) put(p *corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := p.Namespace + "/" + p.Name
	typ := watch.Modified
	if s.pods[key] == nil {
		typ = watch.Added
	}
	p = p.DeepCopy()
	p.Labels["rv"] = strconv.FormatInt(s.rv+1, 10)
	s.pods[key] = p
	s.writeLocked(typ, p)
}

// remove deletes a pod; the DELETED event shows its last state with the
// deletion's own resourceVersion, as the API server sends it.
func (s *sim) remove(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pods[key].DeepCopy()
	delete(s.pods, key)
	s.writeLocked(watch.Deleted, p)
}

// cut ends every open watch, as a dropped connection would; the reflector
// watches again from the last resourceVersion it saw.
func (s *sim) cut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		w.Stop()
		delete(s.watchers, w)
	}
}

// compact forgets the log so far: a watch from an older resourceVersion
// gets 410 Expired and the reflector lists again.
func (s *sim) compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compacted = s.rv
	s.log = nil
}

func (s *sim) get(key string) *corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pods[key]; p != nil {
		return p.DeepCopy()
	}
	return nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// simWatcher is a watch with an unbounded queue, so the sim never blocks
// on a slow reflector and a cut drops what was not read yet.
type simWatcher struct {
	mu     sync.Mutex
	queue  []watch.Event
	wake   chan struct{}
	out    chan watch.Event
	done   chan struct{}
	closed bool
	last   bool  // close once the queue is sent
	sent   int64 // the resourceVersion of the last event sent
}

func newSimWatcher(from int64) *simWatcher {
	w := &simWatcher{wake: make(chan struct{}, 1), out: make(chan watch.Event), done: make(chan struct{}), sent: from}
	go w.pump()
	return w
}

func (w *simWatcher) push(ev watch.Event) {
	w.mu.Lock()
	w.queue = append(w.queue, ev)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *simWatcher) closeAfterQueue() {
	w.mu.Lock()
	w.last = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *simWatcher) pump() {
	defer close(w.out)
	for {
		w.mu.Lock()
		var ev *watch.Event
		if len(w.queue) > 0 {
			ev = &w.queue[0]
			w.queue = w.queue[1:]
		}
		last := w.last && ev == nil
		w.mu.Unlock()
		if last {
			return
		}
		if ev == nil {
			select {
			case <-w.wake:
				continue
			case <-w.done:
				return
			}
		}
		select {
		case w.out <- *ev:
			w.mu.Lock()
			if ev.Type != watch.Error {
				w.sent, _ = strconv.ParseInt(ev.Object.(*wire.PodRow).Pod().ResourceVersion, 10, 64)
			}
			w.mu.Unlock()
		case <-w.done:
			return
		}
	}
}

// caughtUp reports whether an open watch has sent every change: what is
// still to print is then inside the run.
func (s *sim) caughtUp() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		w.mu.Lock()
		ok := !w.closed && w.sent == s.rv
		w.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

func (w *simWatcher) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		close(w.done)
	}
}

func (w *simWatcher) stopped() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

func (w *simWatcher) ResultChan() <-chan watch.Event { return w.out }

// podState is one state a generated pod can be in.
type podState int

const (
	creating podState = iota
	runningReady
	runningNotReady
	crashLooping
	succeeded
	failedPhase
	terminating
	// evicted: Failed as a kubelet leaves a pod it evicted for node
	// pressure; a pod its controller replaces is then left behind.
	evicted
	numStates
)

func (st podState) String() string {
	return [...]string{"creating", "ready", "not-ready", "crash-loop", "succeeded", "failed", "terminating", "evicted"}[st]
}

// newSimPod builds a pod in state st; inc tells its incarnation.
func newSimPod(ns, name string, inc int, st podState, extra string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: types.UID(fmt.Sprintf("%s-%s-%d", ns, name, inc)),
			CreationTimestamp: metav1.NewTime(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)),
			Labels:            map[string]string{"inc": strconv.Itoa(inc), "app": "sim"},
			Annotations:       map[string]string{"state": st.String(), "extra": extra},
		},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "sim:1"}}},
	}
	setState(p, st)
	return p
}

func setState(p *corev1.Pod, st podState) {
	ready := corev1.ConditionFalse
	cs := corev1.ContainerStatus{Name: "app"}
	p.Status = corev1.PodStatus{}
	p.DeletionTimestamp = nil
	switch st {
	case creating:
		p.Status.Phase = corev1.PodPending
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	case runningReady:
		p.Status.Phase, ready, cs.Ready = corev1.PodRunning, corev1.ConditionTrue, true
		cs.State.Running = &corev1.ContainerStateRunning{}
	case runningNotReady:
		p.Status.Phase = corev1.PodRunning
		cs.State.Running = &corev1.ContainerStateRunning{}
	case crashLooping:
		p.Status.Phase = corev1.PodRunning
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off"}
		cs.RestartCount = 3
	case succeeded:
		p.Status.Phase = corev1.PodSucceeded
		cs.State.Terminated = &corev1.ContainerStateTerminated{Reason: "Completed"}
	case failedPhase:
		p.Status.Phase = corev1.PodFailed
		cs.State.Terminated = &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}
	case evicted:
		p.Status.Phase = corev1.PodFailed
		p.Status.Reason = "Evicted"
		p.Status.Message = "The node was low on resource: memory. "
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "TerminationByKubelet"}}
		cs.State.Terminated = &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 137}
	case terminating:
		p.Status.Phase, ready, cs.Ready = corev1.PodRunning, corev1.ConditionTrue, true
		cs.State.Running = &corev1.ContainerStateRunning{}
		now := metav1.NewTime(time.Date(2026, 12, 3, 10, 5, 0, 0, time.UTC))
		p.DeletionTimestamp = &now
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: ready})
	p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	p.Annotations["state"] = st.String()
	delete(p.Annotations, "printable")
	if printable(st) {
		p.Annotations["printable"] = ""
	}
}

// printable: the strict template can print a pod in this state.
func printable(st podState) bool { return st != runningNotReady }

func readyCell(p *corev1.Pod) string {
	if p.Status.ContainerStatuses[0].Ready {
		return "1/1"
	}
	return "0/1"
}

func statusCell(p *corev1.Pod) string {
	cs := p.Status.ContainerStatuses[0]
	switch {
	case p.DeletionTimestamp != nil:
		return "Terminating"
	case cs.State.Waiting != nil:
		return cs.State.Waiting.Reason
	case cs.State.Terminated != nil:
		return cs.State.Terminated.Reason
	}
	return string(p.Status.Phase)
}
