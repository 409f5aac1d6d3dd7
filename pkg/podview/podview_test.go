package podview

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func pod(phase corev1.PodPhase, conds ...corev1.PodCondition) *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{Phase: phase, Conditions: conds}}
}

func TestStates(t *testing.T) {
	ready := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}
	notReady := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse}
	for _, tc := range []struct {
		name                     string
		pod                      *corev1.Pod
		ready, finished, healthy bool
	}{
		{"pending", pod(corev1.PodPending), false, false, false},
		{"running, not ready", pod(corev1.PodRunning, notReady), false, false, false},
		{"running, ready", pod(corev1.PodRunning, ready), true, false, true},
		{"succeeded", pod(corev1.PodSucceeded, notReady), false, true, true},
		{"failed", pod(corev1.PodFailed, notReady), false, true, false},
	} {
		if got := Ready(tc.pod); got != tc.ready {
			t.Errorf("%s: Ready = %v", tc.name, got)
		}
		if got := Finished(tc.pod); got != tc.finished {
			t.Errorf("%s: Finished = %v", tc.name, got)
		}
		if got := Healthy(tc.pod); got != tc.healthy {
			t.Errorf("%s: Healthy = %v", tc.name, got)
		}
	}
}

func TestCondition(t *testing.T) {
	p := pod(corev1.PodRunning,
		corev1.PodCondition{Type: "example.com/Gate", Status: corev1.ConditionTrue},
		corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes"})
	if got := ConditionStatus(p, "EXAMPLE.com/gate"); got != corev1.ConditionTrue {
		t.Errorf("a condition is matched whatever its case, as kubectl wait matches it: got %q", got)
	}
	if got := ConditionStatus(p, corev1.PodReady); got != "" {
		t.Errorf("a condition not reported has no status: got %q", got)
	}
	if c := Unschedulable(p); c == nil || c.Message != "0/3 nodes" {
		t.Errorf("Unschedulable = %+v", c)
	}
	p.Status.Conditions[1].Reason = corev1.PodReasonSchedulingGated
	if c := Unschedulable(p); c != nil {
		t.Errorf("a gated pod is not unschedulable: %+v", c)
	}
}

// A condition counts only for the pod's current generation, judged by its
// own observedGeneration, else the status's, as kubectl wait judges it.
func TestConditionOfAnOlderGeneration(t *testing.T) {
	for _, tc := range []struct {
		name              string
		gen, status, cond int64
		ready             bool
	}{
		{"no generation tracking", 2, 0, 0, true},
		{"condition of the current generation", 2, 1, 2, true},
		{"condition of an older generation", 2, 2, 1, false},
		{"condition without one, status older", 2, 1, 0, false},
		{"condition without one, status current", 2, 2, 0, true},
		{"condition newer than the pod", 1, 0, 2, true},
	} {
		p := pod(corev1.PodRunning, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, ObservedGeneration: tc.cond})
		p.Generation, p.Status.ObservedGeneration = tc.gen, tc.status
		if got := Ready(p); got != tc.ready {
			t.Errorf("%s: Ready = %v, want %v", tc.name, got, tc.ready)
		}
		if got := Stale(p, Condition(p, corev1.PodReady)); got == tc.ready {
			t.Errorf("%s: Stale = %v", tc.name, got)
		}
	}
}
