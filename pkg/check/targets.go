package check

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
)

// A check about workloads (TYPE/NAME arguments, -f manifests) is met only
// once every target's own rule is met too (TargetStatus: the Deployment rolled
// out, the Job complete, the Pod there), and fails at once when a
// target's rule fails. The pods of the targets keep being judged by the
// conditions, with two differences: no minimum number of pods is needed
// unless --min-pods says so (each target's rule says how many pods it
// wants), and the pods of a Job target are judged the way the Job judges
// them (see retriedByJob and Result.Finished). With --until gone, the
// workload targets change nothing: the check waits for their pods to go;
// a target judged by its status (Target.Generic) must be gone itself.

// targetState is one target as the Evaluator sees it.
type targetState struct {
	t Target
	r TargetStatus
	// metAt is when the rule was last found met; zero while it is not.
	metAt time.Time
	// absent, when set, is what the target's absence means (see
	// SetAbsent); else it is "does not exist (yet)".
	absent *TargetStatus
}

// AddTarget makes the check about t; call it for every target before any
// Observe. A target is not met until SetTarget says so; a Pod target is
// met while its pod exists and is not being deleted.
func (e *Evaluator) AddTarget(t Target) {
	if e.until == "" || e.gone && !t.Generic() {
		return
	}
	if e.targets == nil {
		e.targets = map[Target]*targetState{}
		e.jobTargets = map[string]*targetState{}
		e.podTargets = map[string]*targetState{}
		if e.spec.MinPods == Unset {
			e.minPods = 0
		}
	}
	if e.targets[t] != nil {
		return
	}
	ts := &targetState{t: t, r: pending("does not exist (yet)")}
	e.targets[t] = ts
	e.targetOrder = append(e.targetOrder, ts)
	e.targetsUnmet++
	switch t.Kind {
	case TargetJob:
		e.jobTargets[t.Namespace+"/"+t.Name] = ts
	case TargetPod:
		e.podTargets[t.Namespace+"/"+t.Name] = ts
	}
}

// SetAbsent says what the target's absence means, for a target met
// while it does not exist (a hook deleted once it succeeded), and judges
// it so until its object is seen.
func (e *Evaluator) SetAbsent(t Target, r TargetStatus) {
	if ts := e.targets[t]; ts != nil {
		ts.absent = &r
		e.setTarget(ts, r)
	}
}

// SetTarget records what the target's own object says (see TargetStatus). A
// failed rule fails the check at once; like any failure, it stays.
func (e *Evaluator) SetTarget(t Target, r TargetStatus) {
	if ts := e.targets[t]; ts != nil {
		e.setTarget(ts, r)
	}
}

func (e *Evaluator) setTarget(ts *targetState, r TargetStatus) {
	switch was, now := ts.r.State == Met, r.State == Met; {
	case was && !now:
		e.targetsUnmet++
		ts.metAt = time.Time{}
	case !was && now:
		e.targetsUnmet--
		ts.metAt = time.Now()
	}
	ts.r = r
	if r.State == Failed && e.failure == nil {
		e.failure = &Failure{Target: ts.t, Reason: r.Reason, Message: r.Message}
	}
}

// observePodTarget judges a Pod target from its pod: st is its state, nil
// once it is gone.
func (e *Evaluator) observePodTarget(key string, st *podState) {
	ts := e.podTargets[key]
	switch {
	case ts == nil:
	case st == nil && ts.absent != nil:
		e.setTarget(ts, *ts.absent)
	case st == nil:
		e.setTarget(ts, pending("does not exist (yet)"))
	case st.leaving:
		e.setTarget(ts, pending("is being deleted"))
	default:
		e.setTarget(ts, TargetStatus{State: Met, Message: "exists"})
	}
}

// jobTargetOf returns the Job target that controls pod, if any.
func (e *Evaluator) jobTargetOf(pod *corev1.Pod) *targetState {
	if len(e.jobTargets) == 0 {
		return nil
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != TargetJob || !strings.HasPrefix(ref.APIVersion, "batch/") {
		return nil
	}
	return e.jobTargets[pod.Namespace+"/"+ref.Name]
}

// retriedByJob reports whether the container's state is one a Job counts
// as a failed attempt and retries, within its backoffLimit: a container
// that ended, or one crash-looping (restartPolicy OnFailure). A pod that
// cannot start (an image that cannot be pulled, a bad config) is not
// retried by the Job, so that still fails the check at once.
func retriedByJob(cs *corev1.ContainerStatus) bool {
	switch {
	case cs.State.Terminated != nil:
		return true
	case cs.State.Waiting != nil:
		return cs.State.Waiting.Reason == "CrashLoopBackOff"
	}
	return false
}

// failedJobPods returns, when a Job target failed the check, the keys of
// its finished pods that did not succeed: they explain the failure.
func (e *Evaluator) failedJobPods() []string {
	if e.failure == nil || e.failure.Target.Kind != TargetJob {
		return nil
	}
	var keys []string
	for k, st := range e.pods {
		if st.finished && st.job != nil && st.job.t == e.failure.Target {
			keys = append(keys, k)
		}
	}
	return keys
}

// unmetTargetsText names the targets whose rule is not met, with why, in
// the order they were added: "; waiting on deployment/web: 1 of 3
// replicas updated". It costs O(targets).
func (e *Evaluator) unmetTargetsText(podsMet bool) string {
	var parts []string
	for _, ts := range e.targetOrder {
		if ts.r.State != Met {
			parts = append(parts, ts.t.String()+": "+ts.r.Message)
		}
	}
	sep := ": "
	if !podsMet {
		sep = "; waiting on "
	}
	return sep + strings.Join(parts, "; ")
}

func (r Result) targetsText() string {
	if r.Targets == 0 {
		return ""
	}
	return fmt.Sprintf(", and %s met", text.Plural(r.Targets, "the target is", fmt.Sprintf("all %d targets are", r.Targets)))
}

// targetString describes a target's failure in one line.
func (f Failure) targetString() string {
	s := fmt.Sprintf("%s %s/%s failed", strings.ToLower(f.Target.Kind), f.Target.Namespace, f.Target.Name)
	if f.Reason != "" {
		s += " (" + f.Reason + ")"
	}
	if f.Message != "" {
		s += ": " + text.OneLine(f.Message, maxTextLen)
	}
	return s
}

// TargetResults returns each target with what its rule says now, in the
// order they were added.
func (e *Evaluator) TargetResults() []TargetResult {
	out := make([]TargetResult, 0, len(e.targetOrder))
	for _, ts := range e.targetOrder {
		out = append(out, TargetResult{Target: ts.t, Status: ts.r, MetAt: ts.metAt})
	}
	return out
}

// TargetResult is one target and its rule's verdict.
type TargetResult struct {
	Target Target
	Status TargetStatus
	// MetAt is when the rule was last found met; zero while it is not.
	MetAt time.Time
}

// TargetSummary is one target's line of the summary. Verdict is met, not
// met or failed; Reason says what the target's rule reached, what it
// waits on, or why it failed; Pods counts its pods at the end.
type TargetSummary struct {
	// APIVersion is the target's, for a kind judged by its status.
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	// Context is the kubeconfig context, in a run over several.
	Context string `json:"context,omitempty"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
	// Rule names what decided a kind judged by its status: kstatus, a
	// health rule, or its existence.
	Rule string `json:"rule,omitempty"`
	Pods int    `json:"pods"`
	// MetAfterSeconds is when the target was last met, since the start.
	MetAfterSeconds float64 `json:"metAfterSeconds,omitempty"`
	// ShowNamespace names the namespace in the text line (targets in
	// several namespaces).
	ShowNamespace bool `json:"-"`
}

// The verdicts of one target.
const (
	TargetMet    = "met"
	TargetNotMet = "not met"
	TargetFailed = "failed"
)
