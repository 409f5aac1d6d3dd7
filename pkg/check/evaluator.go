package check

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/podview"
)

// State is where a check stands.
type State int

// The states of a check.
const (
	Pending State = iota
	Met
	Failed
)

func (s State) String() string {
	switch s {
	case Pending:
		return "pending"
	case Met:
		return "met"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Failure tells which pod made the check fail and why.
type Failure struct {
	Key       string // namespace/name as the caller passed it
	Reason    string // the --fail-on reason, or ReasonTooManyRestarts
	Container string // empty for pod-level reasons (phase, Evicted)
	Message   string
	Restarts  int32 // restarts seen while the check ran, for ReasonTooManyRestarts
	Limit     int   // the --max-restarts value, for ReasonTooManyRestarts
	// Held is how long the reason held before it failed the check, and
	// FailAfter the --fail-after it exceeded; both 0 without --fail-after.
	Held, FailAfter time.Duration
	// Into is how far into the --stable-for window StableFor the check
	// broke, for ReasonRestarted and ReasonUnstable.
	Into, StableFor time.Duration
	// Budget is the probe budget a container stayed unready past, for
	// ReasonUnhealthy.
	Budget time.Duration
	// Target is the workload that failed by its own rule (a Deployment past
	// its progress deadline, a failed Job); zero for a pod's failure.
	Target Target
}

// Result is the verdict of an Evaluator at one moment.
type Result struct {
	State State
	Pods  int // matching pods now, including those being deleted
	// Leaving counts the matching pods being deleted. They are on their
	// way out, so they neither satisfy nor miss a condition and do not
	// count for MinPods (except for gone, which waits for them).
	Leaving int
	// Finished counts the pods of Job targets that ended without
	// satisfying the conditions (a completed pod is never Ready; a failed
	// one the Job retries): the Job's own rule judges them.
	Finished int
	// LeftBehind counts the pods in phase Failed that their controller
	// replaces (see LeftBehindOf): not judged, and not counted.
	LeftBehind int
	// NodeGone counts the pods, not satisfying the conditions, of a
	// DaemonSet bound to a node that no longer exists (see SetNodeGone):
	// not judged, and not counted.
	NodeGone    int
	Unsatisfied int // of the counted pods, how many miss a condition
	// Rollouts counts Deployments with pods of more than one ReplicaSet
	// among the counted pods: a rollout still going on.
	Rollouts int
	// Unconfirmed counts Deployments whose pods are of one ReplicaSet
	// that the API has not confirmed as the current one (see
	// ConfirmRollouts).
	Unconfirmed int
	MinPods     int     // pods required, resolved from the Spec
	Until       string  // the conditions, "" without --until
	Failure     Failure // set when State is Failed
	// Targets counts the workloads the check is about (see AddTarget),
	// TargetsUnmet those whose own rule is not met yet.
	Targets, TargetsUnmet int
}

// Counted is how many matching pods the conditions are judged on.
func (r Result) Counted() int {
	return r.Pods - r.Leaving - r.Finished - r.LeftBehind - r.NodeGone
}

// WaitsOnRollout reports whether the check would be met but for
// Deployments whose current ReplicaSet is not confirmed yet.
func (r Result) WaitsOnRollout() bool {
	return r.State == Pending && r.podsMet() && r.Unconfirmed > 0
}

// podsMet: with --until, every counted pod satisfies the conditions, enough
// pods match, and no Deployment among them is still rolling out.
func (r Result) podsMet() bool {
	return r.Until != "" && r.Unsatisfied == 0 && r.Counted() >= r.MinPods && r.Rollouts == 0
}

// String says in one line why the result is what it is.
func (r Result) String() string {
	switch {
	case r.State == Failed:
		return r.Failure.String()
	case r.Until == "":
		return fmt.Sprintf("%d matching pods, no failure seen", r.Pods)
	case r.Until == "gone" && r.State == Met:
		return "no matching pod is left"
	case r.Until == "gone":
		return fmt.Sprintf("%d matching pods are still there", r.Pods)
	case r.State == Met:
		return fmt.Sprintf("all %d matching pods satisfy %s%s%s", r.Counted(), r.Until, r.leavingText(), r.targetsText())
	case r.Unsatisfied > 0:
		return fmt.Sprintf("%d of %d matching pods do not satisfy %s%s", r.Unsatisfied, r.Counted(), r.Until, r.leavingText())
	case r.Counted() < r.MinPods:
		return fmt.Sprintf("%d matching pods, want at least %d (%s)%s", r.Counted(), r.MinPods, r.Until, r.leavingText())
	}
	if r.Rollouts == 0 && r.Unconfirmed == 0 {
		return fmt.Sprintf("%d matching pods satisfy %s%s, but %d of %d %s not done yet",
			r.Counted(), r.Until, r.leavingText(), r.TargetsUnmet, r.Targets, text.Plural(r.Targets, "target is", "targets are"))
	}
	if r.Rollouts == 0 {
		return fmt.Sprintf("%d matching pods satisfy %s, but the rollout of %d %s not confirmed yet",
			r.Counted(), r.Until, r.Unconfirmed, text.Plural(r.Unconfirmed, "Deployment is", "Deployments are"))
	}
	return fmt.Sprintf("%d matching pods satisfy %s, but pods of more than one ReplicaSet match: %d %s still rolling out",
		r.Counted(), r.Until, r.Rollouts, text.Plural(r.Rollouts, "Deployment is", "Deployments are"))
}

func (r Result) leavingText() string {
	var parts []string
	if r.Leaving > 0 {
		parts = append(parts, fmt.Sprintf("%d being deleted", r.Leaving))
	}
	if r.Finished > 0 {
		parts = append(parts, fmt.Sprintf("%d finished %s of Jobs", r.Finished, text.Plural(r.Finished, "pod", "pods")))
	}
	if r.LeftBehind > 0 {
		parts = append(parts, fmt.Sprintf("%d failed %s left behind and replaced", r.LeftBehind, text.Plural(r.LeftBehind, "pod", "pods")))
	}
	if r.NodeGone > 0 {
		parts = append(parts, fmt.Sprintf("%d %s on a deleted node", r.NodeGone, text.Plural(r.NodeGone, "pod", "pods")))
	}
	if len(parts) == 0 {
		return ""
	}
	return ", not counting " + strings.Join(parts, " and ")
}

// String describes the failure in one line.
func (f Failure) String() string {
	if f.Target.Kind != "" {
		return f.targetString()
	}
	if f.StableFor > 0 {
		return f.windowString()
	}
	if f.Reason == ReasonUnhealthy && f.Budget > 0 {
		return f.probeString()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "pod %s", f.Key)
	switch {
	case f.Reason == ReasonTooManyRestarts:
		fmt.Fprintf(&b, ": container %q restarted %d times while the check ran, more than --max-restarts %d%s",
			f.Container, f.Restarts, f.Limit, f.heldText())
		return b.String()
	case f.Container != "":
		fmt.Fprintf(&b, ": container %q is %s", f.Container, f.Reason)
	case f.Reason == ReasonFailed:
		b.WriteString(" has phase Failed")
	default:
		fmt.Fprintf(&b, " is %s", f.Reason)
	}
	b.WriteString(f.heldText())
	if f.Message != "" {
		b.WriteString(": " + text.OneLine(f.Message, maxTextLen))
	}
	return b.String()
}

// heldText says how long a reason held, with --fail-after.
func (f Failure) heldText() string {
	if f.FailAfter <= 0 {
		return ""
	}
	return fmt.Sprintf(" for %s, more than --fail-after %s", roundHeld(f.Held), f.FailAfter)
}

// roundHeld shows a time held in whole seconds, or tenths below 10s.
func roundHeld(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// podState is what the Evaluator keeps per pod: a few words, so 50,000
// pods cost little, and no pointer into the informer cache but later's.
type podState struct {
	uid       types.UID
	satisfied bool
	// leaving: the pod is being deleted and the check is not gone, so
	// it does not count (see Result.Leaving).
	leaving bool
	// job is the Job target the pod belongs to, if any; finished: it
	// ended without satisfying the conditions (see Result.Finished).
	job      *targetState
	finished bool
	// left: the pod is left behind by the controller that replaces it
	// (see LeftBehindOf), and the check is not gone, which waits for it.
	left bool
	// nodeGone: the pod does not satisfy the conditions and its node is
	// gone (see SetNodeGone).
	nodeGone bool
	// rev is the Deployment ReplicaSet the pod counts for, if any.
	rev    *revision
	status string
	// later, until Statuses calls it, reads the pod whose STATUS is not
	// worked out yet (see ObserveLater); status is then "" and not
	// counted.
	later func() *corev1.Pod
	// baseline holds restart counts at first sight for pods of the
	// initial list; nil for pods that appeared later (baseline 0).
	baseline map[string]int32
	// failing is the failure the pod shows that --fail-after holds back,
	// seen first at since; nil when there is none.
	failing *Failure
	since   time.Time
	// counts are the restart counts last seen, with --stable-for.
	counts map[string]int32
	// probe watches a container that runs unready with a probe.
	probe *probeWatch
}

// Evaluator judges a check incrementally: every call costs O(size of
// one pod), never a scan of all pods. It is not safe for concurrent use;
// call it from the goroutine that processes the stream.
type Evaluator struct {
	spec        Spec
	until       string
	minPods     int
	failOn      map[string]string // lower-case reason -> spelling
	pods        map[string]*podState
	unsatisfied map[string]struct{}
	statuses    map[string]int
	failure     *Failure
	gone        bool
	leaving     int
	workloads   map[string]*workload
	rollouts    int
	// confirm, current and unconfirmed: see ConfirmRollouts.
	confirm     bool
	current     map[string]CurrentRevision
	unconfirmed int
	// turned holds the Deployments that came to hold the check back since
	// TakeUnconfirmed last ran.
	turned map[string]bool
	// finished counts the pods of Result.Finished; the rest: see AddTarget.
	finished int
	// left holds the pods left behind (see podState.left); fresh, those
	// that became so since TakeLeftBehind last ran.
	left         map[string]LeftBehindPod
	fresh        []string
	targets      map[Target]*targetState
	targetOrder  []*targetState
	targetsUnmet int
	jobTargets   map[string]*targetState // by the Job's namespace/name
	podTargets   map[string]*targetState // by the pod's key
	// replaced: see SetReplaced.
	replaced func(key string, pod *corev1.Pod) bool
	// nodeGone: see SetNodeGone; orphans counts the pods it spares.
	nodeGone func(key string, pod *corev1.Pod) bool
	orphans  int
	// now is the clock of --fail-after (see SetClock); failing holds the
	// pods whose failure it holds back.
	now     func() time.Time
	failing map[string]*podState
	// windowAt is when the --stable-for window opened, zero before;
	// windowFor its length.
	windowAt  time.Time
	windowFor time.Duration
	// probing holds the pods with a container that runs unready with a
	// readiness or startup probe (see ProbesDue).
	probing map[string]*podState
}

// NewEvaluator returns an Evaluator for a validated spec.
func NewEvaluator(spec Spec) *Evaluator {
	e := &Evaluator{
		spec:        spec,
		until:       FormatConditions(spec.Conditions),
		minPods:     spec.RequiredPods(),
		failOn:      make(map[string]string, len(spec.FailOn)),
		pods:        make(map[string]*podState),
		unsatisfied: make(map[string]struct{}),
		statuses:    make(map[string]int),
		gone:        hasGone(spec.Conditions),
		workloads:   make(map[string]*workload),
		current:     make(map[string]CurrentRevision),
		turned:      make(map[string]bool),
		left:        make(map[string]LeftBehindPod),
		now:         time.Now,
		failing:     make(map[string]*podState),
		probing:     make(map[string]*podState),
	}
	for _, r := range spec.FailOn {
		e.failOn[strings.ToLower(r)] = r
	}
	return e
}

// Observe records a present pod (SYNC, ADD or UPDATE); initial is true
// for pods of the initial list. The pod is only read.
func (e *Evaluator) Observe(key string, pod *corev1.Pod, initial bool) {
	e.ObserveStatus(key, pod, "", initial)
}

// ObserveStatus is Observe with the STATUS column kubectl shows for the
// pod, from the server's table; "" works it out with Status.
func (e *Evaluator) ObserveStatus(key string, pod *corev1.Pod, status string, initial bool) {
	e.observe(key, pod, status, nil, initial)
}

// ObserveLater is Observe for a run that judges nothing (see Judges):
// pod need hold only its metadata, and the STATUS is worked out from
// whole() when Statuses is first called, which such a run does once at
// most, for the summary of a stream that was stopped. Decoding each pod
// for a word no one reads was a sixth of `-o json`'s CPU.
func (e *Evaluator) ObserveLater(key string, pod *corev1.Pod, whole func() *corev1.Pod, initial bool) {
	e.observe(key, pod, "", whole, initial)
}

func (e *Evaluator) observe(key string, pod *corev1.Pod, status string, later func() *corev1.Pod, initial bool) {
	if pod == nil {
		e.Forget(key)
		return
	}
	st := e.pods[key]
	if st != nil && st.uid != pod.UID {
		// Deleted and created again between two messages: a new pod
		// that appeared while the check ran.
		e.Forget(key)
		st, initial = nil, false
	}
	var before map[string]int32
	if st != nil {
		before = st.counts
	}
	known := st != nil
	if st == nil {
		st = &podState{uid: pod.UID}
		if initial && e.spec.MaxRestarts != Unset {
			st.baseline = restartCounts(pod)
		}
		e.pods[key] = st
	} else {
		e.untally(key, st)
	}
	st.satisfied = e.satisfies(pod)
	st.status, st.later = "", later
	if later == nil {
		st.status = statusOf(pod, status)
	}
	st.leaving = pod.DeletionTimestamp != nil && !e.gone
	e.observeLeftBehind(key, pod, st)
	st.nodeGone = !st.satisfied && !st.leaving && !st.left && !e.gone && e.nodeGone != nil && e.nodeGone(key, pod)
	st.job = e.jobTargetOf(pod)
	st.finished = !st.leaving && !st.left && !st.nodeGone && st.job != nil && !st.satisfied && podview.Finished(pod)
	if !st.leaving && !st.finished && !st.left && !st.nodeGone && e.until != "" && !e.gone {
		st.rev = e.addRevision(pod)
	}
	e.tally(key, st)
	e.observePodTarget(key, st)
	e.watchWindow(key, pod, st, before, known)
	if e.failure == nil {
		e.holdFailure(key, pod, st, e.findFailure(key, pod, st))
	}
}

// ReadsPod reports whether ObserveStatus, given this STATUS cell, reads
// more of a pod than its metadata: a caller that keeps pods encoded can
// then pass one holding only its metadata, and decode nothing. Only
// conditions (and the targets, which need them), --fail-on and
// --max-restarts read the rest, and the STATUS when there is no cell.
func (e *Evaluator) ReadsPod(status string) bool {
	return status == "" || e.Judges()
}

// Judges is Spec.Judges of the evaluator's spec.
func (e *Evaluator) Judges() bool { return e.spec.Judges() }

// Forget records that the pod is gone. A failure already seen stays:
// the contract exits at once on it, so it is final.
func (e *Evaluator) Forget(key string) {
	st := e.pods[key]
	if st == nil {
		return
	}
	e.untally(key, st)
	delete(e.pods, key)
	delete(e.failing, key)
	delete(e.probing, key)
	e.observePodTarget(key, nil)
}

// Verdict returns where the check stands now, in O(1).
func (e *Evaluator) Verdict() Result {
	r := Result{
		Pods:         len(e.pods),
		Leaving:      e.leaving,
		Unsatisfied:  len(e.unsatisfied),
		Rollouts:     e.rollouts,
		Unconfirmed:  e.unconfirmed,
		MinPods:      e.minPods,
		Until:        e.until,
		Finished:     e.finished,
		LeftBehind:   len(e.left),
		NodeGone:     e.orphans,
		Targets:      len(e.targetOrder),
		TargetsUnmet: e.targetsUnmet,
	}
	switch {
	case e.failure != nil:
		r.State, r.Failure = Failed, *e.failure
	case r.podsMet() && r.Unconfirmed == 0 && r.TargetsUnmet == 0:
		r.State = Met
	}
	return r
}

// Reason is r.String(), naming the Deployments still rolling out or not
// confirmed when they hold the check back. It costs O(workloads): call it
// for the summary.
func (e *Evaluator) Reason(r Result) string {
	s := r.String()
	if r.WaitsOnRollout() {
		return s + ": " + e.unconfirmedText()
	}
	if r.State == Pending && r.TargetsUnmet > 0 {
		s += e.unmetTargetsText(r.podsMet())
	}
	if r.State != Pending || r.Rollouts == 0 || r.Until == "" {
		return s
	}
	names := strings.Join(e.Rollouts(), "; ")
	if r.Unsatisfied > 0 || r.Counted() < r.MinPods {
		return s + "; still rolling out: " + names
	}
	return s + ": " + names
}

// Statuses returns a copy of the pod counts per STATUS. After
// ObserveLater it costs O(pods) once: call it for the summary.
func (e *Evaluator) Statuses() map[string]int {
	for _, st := range e.pods {
		if st.later != nil {
			st.status, st.later = statusOf(st.later(), ""), nil
			e.statuses[st.status]++
		}
	}
	return maps.Clone(e.statuses)
}

// UnsatisfiedKeys returns the sorted keys of pods that miss a condition
// or belong to a ReplicaSet a rollout is replacing (see RolloutGap), with
// the failing pod first when there is one and it is still present. It
// costs O(n log n), so call it once, for the summary.
func (e *Evaluator) UnsatisfiedKeys() []string {
	keys := make([]string, 0, len(e.unsatisfied)+1)
	for k := range e.unsatisfied {
		if e.failure == nil || k != e.failure.Key {
			keys = append(keys, k)
		}
	}
	if e.rollouts > 0 || e.unconfirmed > 0 {
		for k := range e.pods {
			if _, unmet := e.unsatisfied[k]; unmet || e.failure != nil && k == e.failure.Key {
				continue
			}
			if _, old := e.RolloutGap(k); old {
				keys = append(keys, k)
			}
		}
	}
	keys = append(keys, e.failedJobPods()...)
	sort.Strings(keys)
	if e.failure != nil && e.pods[e.failure.Key] != nil {
		keys = append([]string{e.failure.Key}, keys...)
	}
	return keys
}

func (e *Evaluator) tally(key string, st *podState) {
	if st.later == nil {
		e.statuses[st.status]++
	}
	switch {
	case st.leaving:
		e.leaving++
	case st.finished:
		e.finished++
	case st.left:
		// Not judged: counted in Result.LeftBehind alone.
	case st.nodeGone:
		e.orphans++
	case !st.satisfied:
		e.unsatisfied[key] = struct{}{}
	}
}

func (e *Evaluator) untally(key string, st *podState) {
	if st.later == nil {
		if e.statuses[st.status]--; e.statuses[st.status] <= 0 {
			delete(e.statuses, st.status)
		}
	}
	if st.leaving {
		e.leaving--
	}
	if st.finished {
		e.finished--
	}
	if st.nodeGone {
		e.orphans--
	}
	delete(e.unsatisfied, key)
	delete(e.left, key)
	e.removeRevision(st.rev)
	st.rev = nil
}

func (e *Evaluator) satisfies(pod *corev1.Pod) bool {
	for _, c := range e.spec.Conditions {
		if !c.SatisfiedBy(pod) {
			return false
		}
	}
	return true
}

// SetReplaced tells the Evaluator which pods belong to a revision that
// their workload is replacing: such a pod never fails the check through
// --fail-on or --max-restarts, since the rollout replacing it is judged by
// the workload's own rule (a fix rolled out over crash-looping pods is a
// success once it is rolled out). It is called with each present pod
// before it is searched for a failure.
func (e *Evaluator) SetReplaced(replaced func(key string, pod *corev1.Pod) bool) {
	e.replaced = replaced
}

// SetNodeGone tells the Evaluator which pods are bound to a node that no
// longer exists. The DaemonSet controller stops counting such a pod at
// once (its desiredNumberScheduled drops), and so does `kubectl rollout
// status`; the pod garbage collector deletes it only about a minute
// later. Such a pod that does not satisfy the conditions is not judged
// nor counted (Result.NodeGone). It is called with each present pod that
// does not satisfy them; a pod whose node is learned gone later must be
// observed again.
func (e *Evaluator) SetNodeGone(gone func(key string, pod *corev1.Pod) bool) {
	e.nodeGone = gone
}

// findFailure looks for a --fail-on reason in the pod's current state,
// then for too many restarts. Pods being deleted are skipped: the kubelet
// moves them to phase Failed on purpose, which is no failure of a rollout;
// so are the pods of replaced revisions (see SetReplaced).
func (e *Evaluator) findFailure(key string, pod *corev1.Pod, st *podState) *Failure {
	if pod.DeletionTimestamp != nil || e.replaced != nil && e.replaced(key, pod) {
		e.endProbe(key, st)
		return nil
	}
	if st.nodeGone {
		e.endProbe(key, st)
		return nil
	}
	if _, left := LeftBehindOf(pod); left {
		// Its controller replaces it, with --until gone too.
		e.endProbe(key, st)
		return nil
	}
	if f := e.reasonFailure(pod, st.job != nil); f != nil {
		f.Key = key
		return f
	}
	if f := e.restartFailure(pod, st); f != nil {
		f.Key = key
		return f
	}
	return e.probeFailure(key, pod, st)
}

// reasonFailure checks, most specific first: the pod's own reason
// (Evicted), each container's current waiting or terminated reason, then
// the Failed phase. Last states are not used: a crash from before the
// check started must not fail it; CrashLoopBackOff shows as waiting.
// A pod of a Job target (retried) is not failed by what the Job retries
// (see retriedByJob): the Job's own Failed condition says when it gives up.
func (e *Evaluator) reasonFailure(pod *corev1.Pod, retried bool) *Failure {
	if r, ok := e.matchReason(pod.Status.Reason); ok && (!retried || pod.Status.Phase != corev1.PodFailed) {
		return &Failure{Reason: r, Message: pod.Status.Message}
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range list {
			if retried && retriedByJob(&list[i]) {
				continue
			}
			if f := e.containerFailure(&list[i]); f != nil {
				return f
			}
		}
	}
	if pod.Status.Phase == corev1.PodFailed && !retried {
		if r, ok := e.matchReason(ReasonFailed); ok {
			return &Failure{Reason: r, Message: podFailedMessage(pod)}
		}
	}
	return nil
}

// podFailedMessage says why a pod is Failed: its own reason and message
// (Evicted: ...), else the first container that ended in error.
func podFailedMessage(pod *corev1.Pod) string {
	if pod.Status.Reason != "" && pod.Status.Message != "" {
		return pod.Status.Reason + ": " + pod.Status.Message
	}
	if s := pod.Status.Reason + pod.Status.Message; s != "" {
		return s
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range list {
			if t := list[i].State.Terminated; t != nil && t.ExitCode != 0 {
				msg := fmt.Sprintf("container %q terminated with exit code %d", list[i].Name, t.ExitCode)
				if t.Reason != "" {
					msg += " (" + t.Reason + ")"
				}
				return msg
			}
		}
	}
	return ""
}

func (e *Evaluator) containerFailure(cs *corev1.ContainerStatus) *Failure {
	var reason, message string
	switch {
	case cs.State.Waiting != nil:
		reason, message = cs.State.Waiting.Reason, cs.State.Waiting.Message
	case cs.State.Terminated != nil:
		reason, message = cs.State.Terminated.Reason, cs.State.Terminated.Message
	}
	if r, ok := e.matchReason(reason); ok {
		return &Failure{Reason: r, Container: cs.Name, Message: message}
	}
	return nil
}

func (e *Evaluator) matchReason(reason string) (string, bool) {
	if reason == "" || len(e.failOn) == 0 {
		return "", false
	}
	r, ok := e.failOn[strings.ToLower(reason)]
	return r, ok
}

func (e *Evaluator) restartFailure(pod *corev1.Pod, st *podState) *Failure {
	if e.spec.MaxRestarts == Unset {
		return nil
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range list {
			n := list[i].RestartCount - st.baseline[list[i].Name]
			if int64(n) > int64(e.spec.MaxRestarts) {
				return &Failure{Reason: ReasonTooManyRestarts, Container: list[i].Name, Restarts: n, Limit: e.spec.MaxRestarts}
			}
		}
	}
	return nil
}

// restartCounts returns the nonzero restart counts by container name;
// init and regular container names are unique within a pod.
func restartCounts(pod *corev1.Pod) map[string]int32 {
	var counts map[string]int32
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range list {
			if list[i].RestartCount == 0 {
				continue
			}
			if counts == nil {
				counts = make(map[string]int32)
			}
			counts[list[i].Name] = list[i].RestartCount
		}
	}
	return counts
}

// statusOf is the server's STATUS cell when the caller has it, else the
// same word worked out here; a pod with no status at all (not even a
// phase) is counted as Unknown rather than under an empty word.
func statusOf(pod *corev1.Pod, status string) string {
	if status == "" {
		status = Status(pod)
	}
	if status == "" {
		return "Unknown"
	}
	return status
}
