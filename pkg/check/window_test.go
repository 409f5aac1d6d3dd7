package check

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func windowEval(d time.Duration) (*Evaluator, *fakeClock) {
	spec := untilSpec("ready")
	spec.StableFor = d
	e := NewEvaluator(spec)
	c := newClock()
	e.SetClock(c.now)
	return e, c
}

func TestWindowRestartFails(t *testing.T) {
	e, c := windowEval(30 * time.Second)
	e.Observe("k", newPod("p", ready()), true)
	if e.Verdict().State != Met {
		t.Fatal("not met")
	}
	e.StartWindow(30 * time.Second)
	c.add(10 * time.Second)
	// Still Ready, but the container restarted.
	e.Observe("k", newPod("p", ready(), running("app", 1)), false)
	v := e.Verdict()
	want := `pod k: container "app" restarted 10s into --stable-for 30s (restarts 0 -> 1)`
	if v.State != Failed || v.Failure.String() != want {
		t.Fatalf("got %s %q, want failed %q", v.State, v.Failure, want)
	}
}

func TestWindowUnreadyFails(t *testing.T) {
	e, c := windowEval(30 * time.Second)
	e.Observe("k", newPod("p", ready()), true)
	e.StartWindow(30 * time.Second)
	c.add(3 * time.Second)
	e.Observe("k", newPod("p", phase(corev1.PodRunning), cond(corev1.PodReady, corev1.ConditionFalse, "", "")), false)
	v := e.Verdict()
	if v.State != Failed || !strings.Contains(v.Failure.String(), "pod k: Running no longer satisfies ready, 3s into --stable-for 30s") {
		t.Fatalf("got %s %q", v.State, v.Failure)
	}
}

func TestWindowQuietStaysMet(t *testing.T) {
	e, c := windowEval(5 * time.Second)
	e.Observe("k", newPod("p", ready()), true)
	e.StartWindow(5 * time.Second)
	c.add(4 * time.Second)
	e.Observe("k", newPod("p", ready()), false) // a resync: nothing changed
	e.Unsteady()
	if v := e.Verdict(); v.State != Met {
		t.Fatalf("quiet window: %s", v)
	}
}

func TestWindowPodGoneFails(t *testing.T) {
	e, c := windowEval(30 * time.Second)
	e.Observe("k", newPod("p", ready()), true)
	e.StartWindow(30 * time.Second)
	c.add(2 * time.Second)
	e.Forget("k")
	e.Unsteady()
	v := e.Verdict()
	if v.State != Failed || !strings.Contains(v.Failure.String(), "the check was met, then 2s into --stable-for 30s: 0 matching pods, want at least 1") {
		t.Fatalf("got %s %q", v.State, v.Failure)
	}
}

func TestWindowBeforeStartIgnoresRestarts(t *testing.T) {
	e, _ := windowEval(30 * time.Second)
	e.Observe("k", newPod("p", phase(corev1.PodRunning), runningUnready(0)), true)
	e.Observe("k", newPod("p", ready(), running("app", 2)), false)
	if v := e.Verdict(); v.State != Met {
		t.Fatalf("restarts before the window: %s", v)
	}
}
