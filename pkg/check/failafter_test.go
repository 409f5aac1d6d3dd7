package check

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *fakeClock               { return &fakeClock{t: time.Unix(1_000_000, 0)} }
func crashing(restarts int32) podOpt     { return waiting("app", "CrashLoopBackOff", "back-off", restarts) }
func runningUnready(restarts int32) podOpt {
	return status(corev1.ContainerStatus{Name: "app", RestartCount: restarts,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
}

func failAfterEval(d time.Duration, maxRestarts int) (*Evaluator, *fakeClock) {
	spec := untilSpec("ready")
	spec.FailAfter, spec.MaxRestarts = d, maxRestarts
	if err := spec.Validate(); err != nil {
		panic(err)
	}
	e := NewEvaluator(spec)
	c := newClock()
	e.SetClock(c.now)
	return e, c
}

func TestFailAfterHoldsThenFails(t *testing.T) {
	e, c := failAfterEval(10*time.Second, Unset)
	e.Observe("k", newPod("p", phase(corev1.PodRunning), crashing(1)), true)
	if got := e.Verdict().State; got != Pending {
		t.Fatalf("at first sight: %s, want pending", got)
	}
	at, ok := e.NextExpiry()
	if !ok || !at.Equal(c.t.Add(10*time.Second)) {
		t.Fatalf("NextExpiry = %v, %v; want first sight + 10s", at, ok)
	}
	// Running unready between two back-offs: not recovered.
	c.add(4 * time.Second)
	e.Observe("k", newPod("p", phase(corev1.PodRunning), runningUnready(2)), false)
	c.add(5 * time.Second)
	e.Expire()
	if got := e.Verdict().State; got != Pending {
		t.Fatalf("after 9s: %s, want pending", got)
	}
	c.add(1500 * time.Millisecond)
	e.Expire() // no message: the timer alone
	v := e.Verdict()
	if v.State != Failed {
		t.Fatalf("after 10.5s: %s, want failed", v.State)
	}
	want := `pod k: container "app" is CrashLoopBackOff for 11s, more than --fail-after 10s: back-off`
	if got := v.Failure.String(); got != want {
		t.Errorf("failure:\n got %s\nwant %s", got, want)
	}
	if _, ok := e.NextExpiry(); ok {
		t.Error("NextExpiry after the failure, want none")
	}
}

func TestFailAfterRecoveryResetsClock(t *testing.T) {
	e, c := failAfterEval(10*time.Second, Unset)
	e.Observe("k", newPod("p", phase(corev1.PodRunning), crashing(1)), true)
	c.add(8 * time.Second)
	e.Observe("k", newPod("p", ready()), false)
	if _, ok := e.NextExpiry(); ok {
		t.Fatal("a Ready pod still has a failure held")
	}
	if got := e.Verdict().State; got != Met {
		t.Fatalf("recovered: %s, want met", got)
	}
	// It crashes again: a new 10s.
	c.add(time.Second)
	e.Observe("k", newPod("p", phase(corev1.PodRunning), crashing(2)), false)
	c.add(9 * time.Second)
	e.Expire()
	if got := e.Verdict().State; got != Pending {
		t.Fatalf("9s into the second crash: %s, want pending", got)
	}
	c.add(time.Second)
	e.Expire()
	if v := e.Verdict(); v.State != Failed || v.Failure.Held != 10*time.Second {
		t.Fatalf("10s into the second crash: %s held %s, want failed held 10s", v.State, v.Failure.Held)
	}
}

func TestFailAfterGonePodHoldsNothing(t *testing.T) {
	e, c := failAfterEval(10*time.Second, Unset)
	e.Observe("k", newPod("p", phase(corev1.PodRunning), crashing(1)), true)
	c.add(5 * time.Second)
	e.Observe("k", newPod("p", phase(corev1.PodRunning), crashing(1), deleting()), false)
	c.add(10 * time.Second)
	e.Expire()
	if _, ok := e.NextExpiry(); ok || e.Verdict().State == Failed {
		t.Fatalf("a pod being deleted failed or holds a failure: %s", e.Verdict())
	}
	e.Observe("k", newPod("p", phase(corev1.PodRunning), crashing(1)), false)
	e.Forget("k")
	c.add(20 * time.Second)
	e.Expire()
	if e.Verdict().State == Failed {
		t.Fatal("a forgotten pod failed the check")
	}
}

func TestFailAfterZeroFailsAtOnce(t *testing.T) {
	e, _ := failAfterEval(0, Unset)
	e.Observe("k", newPod("p", phase(corev1.PodRunning), crashing(1)), true)
	v := e.Verdict()
	if v.State != Failed || strings.Contains(v.Failure.String(), "fail-after") {
		t.Fatalf("without --fail-after: %s %q, want failed at once, no held time", v.State, v.Failure)
	}
}

func TestFailAfterFailedPhaseHolds(t *testing.T) {
	e, c := failAfterEval(5*time.Second, Unset)
	e.Observe("k", newPod("p", phase(corev1.PodFailed)), true)
	c.add(4 * time.Second)
	e.Observe("k", newPod("p", phase(corev1.PodFailed)), false)
	if e.Verdict().State == Failed {
		t.Fatal("failed before --fail-after")
	}
	c.add(time.Second)
	e.Expire()
	if v := e.Verdict(); v.State != Failed || v.Failure.Reason != ReasonFailed {
		t.Fatalf("Failed phase after 5s: %s", v)
	}
}

func TestFailAfterRestarts(t *testing.T) {
	e, c := failAfterEval(10*time.Second, 1)
	e.Observe("k", newPod("p", phase(corev1.PodRunning), runningUnready(0)), true)
	e.Observe("k", newPod("p", phase(corev1.PodRunning), runningUnready(2)), false)
	c.add(6 * time.Second)
	// Ready again: the restarts stopped.
	e.Observe("k", newPod("p", ready(), running("app", 2)), false)
	c.add(10 * time.Second)
	e.Expire()
	if e.Verdict().State != Met {
		t.Fatalf("ready again: %s, want met", e.Verdict())
	}
	e.Observe("k", newPod("p", phase(corev1.PodRunning), runningUnready(3)), false)
	c.add(10 * time.Second)
	e.Expire()
	want := `restarted 3 times while the check ran, more than --max-restarts 1 for 10s, more than --fail-after 10s`
	if v := e.Verdict(); v.State != Failed || !strings.Contains(v.Failure.String(), want) {
		t.Fatalf("restarting for 10s: %s", v)
	}
}

func TestFailAfterValidation(t *testing.T) {
	for _, tc := range []struct {
		flags Flags
		want  string
	}{
		{Flags{Until: "ready", MinPods: Unset, MaxRestarts: Unset, FailAfter: -time.Second}, "invalid --fail-after -1s: must not be negative"},
		{Flags{Until: "ready", FailOn: "none", FailOnSet: true, MinPods: Unset, MaxRestarts: Unset, FailAfter: time.Second, ProbeBudget: "never"}, "--fail-after needs a --fail-on reason or --max-restarts"},
	} {
		_, err := tc.flags.Spec()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Spec(%+v) = %v, want %q", tc.flags, err, tc.want)
		}
	}
}
