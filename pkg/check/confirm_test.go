package check

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Right after `kubectl set image`, before the new ReplicaSet has a pod,
// every matching pod is an old, ready one. With ConfirmRollouts the check
// waits for the API to name the current ReplicaSet, then for its pods.
func TestConfirmRolloutBeforeTheNewReplicaSetHasPods(t *testing.T) {
	old := func(n string, opts ...podOpt) *corev1.Pod {
		return newPod(n, append([]podOpt{ofReplicaSet("web", "old1", 0), ready()}, opts...)...)
	}
	nu := func(n string, opts ...podOpt) *corev1.Pod {
		return newPod(n, append([]podOpt{ofReplicaSet("web", "new2", time.Hour)}, opts...)...)
	}
	e := NewEvaluator(untilSpec("healthy"))
	e.ConfirmRollouts()
	runSteps(t, e, []step{
		{key: "default/web-old1-a", pod: old("web-old1-a"), initial: true, want: Pending},
		{key: "default/web-old1-b", pod: old("web-old1-b"), initial: true, want: Pending},
	})
	r := e.Verdict()
	if !r.WaitsOnRollout() || r.Unconfirmed != 1 {
		t.Fatalf("verdict = %+v, want one unconfirmed Deployment", r)
	}
	if got := e.Unconfirmed(); !reflect.DeepEqual(got, []string{"default/web"}) {
		t.Errorf("Unconfirmed() = %q", got)
	}
	if got, want := e.Reason(r), "2 matching pods satisfy healthy, but the rollout of 1 Deployment is not confirmed yet: default/web: not checked yet"; got != want {
		t.Errorf("Reason() = %q, want %q", got, want)
	}
	if _, ok := e.RolloutGap("default/web-old1-a"); ok || len(e.UnsatisfiedKeys()) != 0 {
		t.Error("a Deployment not looked up yet has nothing to explain")
	}

	e.SetCurrent("default/web", CurrentRevision{Waiting: "no ReplicaSet has its current pod template yet (the Deployment is paused)"})
	r = e.Verdict()
	if r.State != Pending || !strings.Contains(e.Reason(r), "default/web: no ReplicaSet has its current pod template yet (the Deployment is paused)") {
		t.Errorf("while paused: %v %q", r.State, e.Reason(r))
	}
	gap, ok := e.RolloutGap("default/web-old1-a")
	if !ok || gap.Want != "pods of the current ReplicaSet of Deployment web" || !strings.Contains(gap.Got, "pod of ReplicaSet web-old1; no ReplicaSet") {
		t.Errorf("RolloutGap while paused = %+v %v", gap, ok)
	}

	e.SetCurrent("default/web", CurrentRevision{ReplicaSet: "web-new2", Hash: "new2"})
	r = e.Verdict()
	if want := "default/web: the current ReplicaSet is web-new2, but the matching pods are of web-old1"; r.State != Pending || !strings.HasSuffix(e.Reason(r), want) {
		t.Errorf("new ReplicaSet without pods: %v %q, want it to end in %q", r.State, e.Reason(r), want)
	}
	if got := e.UnsatisfiedKeys(); !reflect.DeepEqual(got, []string{"default/web-old1-a", "default/web-old1-b"}) {
		t.Errorf("UnsatisfiedKeys() = %q", got)
	}

	runSteps(t, e, []step{
		{key: "default/web-new2-a", pod: nu("web-new2-a"), want: Pending},
		{key: "default/web-new2-a", pod: nu("web-new2-a", ready()), want: Pending},
		{key: "default/web-old1-a", pod: old("web-old1-a", deleting()), want: Pending},
		{key: "default/web-old1-b", pod: old("web-old1-b", deleting()), want: Met},
		{key: "default/web-old1-a", want: Met},
	})
	if r := e.Verdict(); r.Unconfirmed != 0 || r.Rollouts != 0 {
		t.Errorf("after the rollout: %+v", r)
	}
	for k := range e.pods {
		e.Forget(k)
	}
	if e.unconfirmed != 0 || len(e.workloads) != 0 {
		t.Errorf("left after every pod went: %d unconfirmed, %d workloads", e.unconfirmed, len(e.workloads))
	}
}

// The newest of two ReplicaSets is the current one when the API said so,
// whatever the pods' creation times say (a rollback).
func TestConfirmRolloutNamesTheCurrentReplicaSet(t *testing.T) {
	e := NewEvaluator(untilSpec("ready"))
	e.ConfirmRollouts()
	e.SetCurrent("default/web", CurrentRevision{ReplicaSet: "web-a", Hash: "a"})
	e.Observe("d/web-a-1", newPod("web-a-1", ofReplicaSet("web", "a", 0), ready()), true)
	e.Observe("d/web-b-1", newPod("web-b-1", ofReplicaSet("web", "b", time.Hour), ready()), true)
	if got := e.UnsatisfiedKeys(); !reflect.DeepEqual(got, []string{"d/web-b-1"}) {
		t.Errorf("UnsatisfiedKeys() = %q, want the pod of the ReplicaSet that is not current", got)
	}
	e.Forget("d/web-b-1")
	if r := e.Verdict(); r.State != Met {
		t.Errorf("only pods of the current ReplicaSet: %v %s", r.State, e.Reason(r))
	}
}

func TestConfirmRolloutShortCuts(t *testing.T) {
	pod := newPod("web-a-1", ofReplicaSet("web", "a", 0), ready())
	tests := []struct {
		name    string
		until   string
		confirm bool
		current *CurrentRevision
		want    State
	}{
		{"off by default", "ready", false, nil, Met},
		{"not for gone", "gone", true, nil, Pending},
		{"same ReplicaSet (a scale change)", "ready", true, &CurrentRevision{ReplicaSet: "web-a", Hash: "a"}, Met},
		{"the API cannot tell", "ready", true, &CurrentRevision{Unverifiable: true}, Met},
		{"controller behind", "ready", true, &CurrentRevision{ReplicaSet: "web-a", Hash: "a", Waiting: "generation 3 not observed yet"}, Pending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewEvaluator(untilSpec(tt.until))
			if tt.confirm {
				e.ConfirmRollouts()
			}
			if tt.current != nil {
				e.SetCurrent("default/web", *tt.current)
			}
			e.Observe("default/web-a-1", pod, true)
			r := e.Verdict()
			if r.State != tt.want {
				t.Errorf("state = %v, want %v (%s)", r.State, tt.want, e.Reason(r))
			}
			if tt.until == "gone" && r.Unconfirmed != 0 {
				t.Errorf("gone counted %d unconfirmed Deployments", r.Unconfirmed)
			}
		})
	}
}

// TakeUnconfirmed names a Deployment once each time it comes to hold the
// check back, and not once it no longer does.
func TestTakeUnconfirmedOncePerTurn(t *testing.T) {
	pod := func(n, hash string) *corev1.Pod { return newPod(n, ofReplicaSet("web", hash, 0), ready()) }
	e := NewEvaluator(untilSpec("ready"))
	e.ConfirmRollouts()
	e.Observe("default/web-old1-a", pod("web-old1-a", "old1"), true)
	if got := e.TakeUnconfirmed(); !reflect.DeepEqual(got, []string{"default/web"}) || !e.IsUnconfirmed("default/web") {
		t.Fatalf("first take = %q", got)
	}
	e.Observe("default/web-old1-b", pod("web-old1-b", "old1"), true)
	if got := e.TakeUnconfirmed(); len(got) != 0 {
		t.Errorf("second take, nothing turned = %q", got)
	}
	e.SetCurrent("default/web", CurrentRevision{ReplicaSet: "web-old1", Hash: "old1"})
	if e.IsUnconfirmed("default/web") || len(e.TakeUnconfirmed()) != 0 {
		t.Error("a confirmed Deployment is still named")
	}
	// A new revision alone, not the confirmed one: it holds the check again.
	e.Forget("default/web-old1-a")
	e.Forget("default/web-old1-b")
	e.Observe("default/web-new2-a", pod("web-new2-a", "new2"), false)
	if got := e.TakeUnconfirmed(); !reflect.DeepEqual(got, []string{"default/web"}) {
		t.Errorf("take after the revision changed = %q", got)
	}
	// The confirmed revision alone again: it holds nothing, nothing is named.
	e.Forget("default/web-new2-a")
	e.Observe("default/web-old1-a", pod("web-old1-a", "old1"), false)
	if e.IsUnconfirmed("default/web") {
		t.Fatal("the confirmed revision back alone should not hold the check")
	}
	if got := e.TakeUnconfirmed(); len(got) != 0 {
		t.Errorf("take of a Deployment confirmed again = %q", got)
	}
}
