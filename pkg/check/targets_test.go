package check

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	webTarget = Target{Kind: TargetDeployment, Namespace: "default", Name: "web"}
	jobTarget = Target{Kind: TargetJob, Namespace: "default", Name: "migrate"}
	podTarget = Target{Kind: TargetPod, Namespace: "default", Name: "db-0"}
)

func ofJob(name string) podOpt {
	return func(p *corev1.Pod) {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: name, Controller: &yes}}
	}
}

// A target's own rule holds the check back although its pods satisfy the
// conditions, and --min-pods defaults to 0: a Deployment scaled to zero is
// rolled out with no pod at all.
func TestTargetRuleHoldsTheCheck(t *testing.T) {
	e := NewEvaluator(untilSpec("healthy"))
	e.AddTarget(webTarget)
	if r := e.Verdict(); r.State != Pending || r.MinPods != 0 || r.TargetsUnmet != 1 {
		t.Fatalf("before any pod: %+v", r)
	}
	runSteps(t, e, []step{{key: "default/web-1", pod: newPod("web-1", ready()), initial: true, want: Pending}})
	r := e.Verdict()
	want := "1 matching pods satisfy healthy, but 1 of 1 target is not done yet: deployment/web: does not exist (yet)"
	if got := e.Reason(r); got != want {
		t.Errorf("Reason() = %q, want %q", got, want)
	}
	e.SetTarget(webTarget, TargetStatus{State: Pending, Message: "1 of 3 replicas updated"})
	if got := e.Reason(e.Verdict()); !strings.HasSuffix(got, "deployment/web: 1 of 3 replicas updated") {
		t.Errorf("Reason() = %q", got)
	}
	e.SetTarget(webTarget, TargetStatus{State: Met, Message: "rolled out 1/1"})
	r = e.Verdict()
	if r.State != Met || e.Reason(r) != "all 1 matching pods satisfy healthy, and the target is met" {
		t.Errorf("rolled out: %v %q", r.State, e.Reason(r))
	}
	// A pod that misses the condition still holds it back.
	runSteps(t, e, []step{{key: "default/web-2", pod: newPod("web-2", phase(corev1.PodRunning)), want: Pending}})
	if got := e.Reason(e.Verdict()); got != "1 of 2 matching pods do not satisfy healthy" {
		t.Errorf("Reason() = %q", got)
	}
	e.Forget("default/web-2")
	e.Forget("default/web-1")
	if r := e.Verdict(); r.State != Met {
		t.Errorf("scaled to zero: %+v", r)
	}
}

// A target whose rule fails fails the check at once, and for good.
func TestTargetFailureIsFinal(t *testing.T) {
	e := NewEvaluator(untilSpec("ready"))
	e.AddTarget(webTarget)
	e.SetTarget(webTarget, TargetStatus{State: Failed, Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "web-1" has timed out progressing.`})
	e.SetTarget(webTarget, TargetStatus{State: Met, Message: "rolled out 1/1"})
	r := e.Verdict()
	if r.State != Failed || r.Failure.Target != webTarget {
		t.Fatalf("verdict = %+v", r)
	}
	if want := `deployment default/web failed (ProgressDeadlineExceeded): ReplicaSet "web-1" has timed out progressing.`; r.String() != want {
		t.Errorf("String() = %q, want %q", r.String(), want)
	}
}

// The pods of a Job target are judged as the Job judges them: a failed pod
// the Job retries neither fails the check nor holds it back, a completed
// pod need not be Ready, and the Job's Complete meets the check. A pod that
// cannot start still fails it at once.
func TestJobTargetPods(t *testing.T) {
	e := NewEvaluator(untilSpec("ready"))
	e.AddTarget(jobTarget)
	failed := newPod("migrate-a", ofJob("migrate"), phase(corev1.PodFailed), terminated("app", "Error", 1))
	crashing := newPod("migrate-b", ofJob("migrate"), phase(corev1.PodRunning), waiting("app", "CrashLoopBackOff", "back-off", 2))
	done := newPod("migrate-b", ofJob("migrate"), phase(corev1.PodSucceeded), terminated("app", "Completed", 0))
	runSteps(t, e, []step{
		{key: "default/migrate-a", pod: failed, want: Pending},
		{key: "default/migrate-b", pod: crashing, want: Pending},
		{key: "default/migrate-b", pod: done, want: Pending},
	})
	r := e.Verdict()
	if r.Finished != 2 || r.Counted() != 0 {
		t.Fatalf("verdict = %+v, want both pods finished and not counted", r)
	}
	e.SetTarget(jobTarget, TargetStatus{State: Met, Message: "complete: 1/1 succeeded"})
	if r := e.Verdict(); r.State != Met || !strings.Contains(r.String(), "not counting 2 finished pods of Jobs") {
		t.Errorf("complete: %v %q", r.State, r.String())
	}

	// Not a Job target: the failed pod fails the check, as without targets.
	other := NewEvaluator(untilSpec("ready"))
	other.AddTarget(webTarget)
	runSteps(t, other, []step{{key: "default/migrate-a", pod: failed, want: Failed}})

	pull := NewEvaluator(untilSpec("ready"))
	pull.AddTarget(jobTarget)
	runSteps(t, pull, []step{{key: "default/migrate-c", pod: newPod("migrate-c", ofJob("migrate"), waiting("app", "ImagePullBackOff", "", 0)), want: Failed}})
}

// When a Job target fails, its failed pods explain why.
func TestFailedJobExplainsItsPods(t *testing.T) {
	e := NewEvaluator(untilSpec("healthy"))
	e.AddTarget(jobTarget)
	runSteps(t, e, []step{
		{key: "default/migrate-a", pod: newPod("migrate-a", ofJob("migrate"), phase(corev1.PodFailed), terminated("app", "Error", 1)), want: Pending},
		{key: "default/other", pod: newPod("other", ready()), want: Pending},
	})
	e.SetTarget(jobTarget, TargetStatus{State: Failed, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"})
	if got := e.UnsatisfiedKeys(); !reflect.DeepEqual(got, []string{"default/migrate-a"}) {
		t.Errorf("UnsatisfiedKeys() = %q", got)
	}
}

// A Pod target is met while its pod is there and not being deleted.
func TestPodTarget(t *testing.T) {
	e := NewEvaluator(untilSpec("ready"))
	e.AddTarget(podTarget)
	runSteps(t, e, []step{
		{key: "default/db-0", pod: newPod("db-0", ready()), want: Met},
		{key: "default/db-0", pod: newPod("db-0", ready(), deleting()), want: Pending},
		{key: "default/db-0", pod: nil, want: Pending},
	})
	if got := e.TargetResults(); len(got) != 1 || got[0].Status.Message != "does not exist (yet)" {
		t.Errorf("TargetResults() = %+v", got)
	}
}

// With --until gone, targets change nothing.
func TestTargetsWithGone(t *testing.T) {
	e := NewEvaluator(untilSpec("gone"))
	e.AddTarget(webTarget)
	if r := e.Verdict(); r.State != Met || r.Targets != 0 {
		t.Errorf("gone with no pod: %+v", r)
	}
}
