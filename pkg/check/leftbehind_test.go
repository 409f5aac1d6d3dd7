package check

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const evictionMessage = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 52Mi. "

// ownedBy makes kind/name (of group/version apiVersion) the pod's
// controller.
func ownedBy(apiVersion, kind, name string) podOpt {
	return func(p *corev1.Pod) {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("uid-" + name), Controller: &yes}}
	}
}

// inReplicaSet makes the pod one of Deployment web's, of ReplicaSet
// web-HASH.
func inReplicaSet(hash string) podOpt {
	return func(p *corev1.Pod) {
		p.Labels = map[string]string{"pod-template-hash": hash}
		ownedBy("apps/v1", "ReplicaSet", "web-"+hash)(p)
	}
}

// evicted is the pod as a kubelet leaves it after a node-pressure
// eviction: Failed, reason Evicted, DisruptionTarget, its container ended.
func evicted() podOpt {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		podReason("Evicted", evictionMessage)(p)
		cond(corev1.DisruptionTarget, corev1.ConditionTrue, "TerminationByKubelet", evictionMessage)(p)
		cond(corev1.PodReady, corev1.ConditionFalse, "PodFailed", "")(p)
		terminated("app", "Error", 137)(p)
	}
}

// shutDown is the pod after a graceful node shutdown.
func shutDown() podOpt {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		podReason("Terminated", "Pod was terminated in response to imminent node shutdown.")(p)
		cond(corev1.DisruptionTarget, corev1.ConditionTrue, "TerminationByKubelet", "")(p)
		terminated("app", "Completed", 0)(p)
	}
}

func TestLeftBehindOf(t *testing.T) {
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"evicted pod of a ReplicaSet", newPod("a", inReplicaSet("h1"), evicted()), true},
		{"shut-down pod of a StatefulSet", newPod("a", ownedBy("apps/v1", "StatefulSet", "db"), shutDown()), true},
		{"Failed pod of a DaemonSet, no reason", newPod("a", ownedBy("apps/v1", "DaemonSet", "agent"), phase(corev1.PodFailed)), true},
		{"evicted bare pod", newPod("a", evicted()), false},
		{"evicted pod of a Job", newPod("a", ownedBy("batch/v1", "Job", "migrate"), evicted()), false},
		{"evicted pod of a custom ReplicaSet kind", newPod("a", ownedBy("example.com/v1", "ReplicaSet", "x"), evicted()), false},
		{"evicted pod of a ReplicaSet, being deleted", newPod("a", inReplicaSet("h1"), evicted(), deleting()), false},
		{"running pod of a ReplicaSet", newPod("a", inReplicaSet("h1"), ready()), false},
		{"no pod", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, got := LeftBehindOf(c.pod); got != c.want {
				t.Errorf("LeftBehindOf = %v, want %v", got, c.want)
			}
		})
	}
}

// A pod left behind neither fails the check, nor satisfies or misses a
// condition, nor counts for --min-pods or as a revision of its Deployment;
// a bare pod or a Job's pod in the same state still fails it.
func TestEvaluatorLeftBehind(t *testing.T) {
	for _, until := range []string{"ready", "healthy", "running", "completed", "condition=Ready"} {
		t.Run(until, func(t *testing.T) {
			spec := untilSpec(until)
			spec.MaxRestarts = 0
			e := NewEvaluator(spec)
			e.Observe("default/web-h1-a", newPod("web-h1-a", inReplicaSet("h1"), evicted()), true)
			v := e.Verdict()
			if v.State != Pending || v.LeftBehind != 1 || v.Counted() != 0 || v.Unsatisfied != 0 {
				t.Fatalf("left behind alone: %v (%s), LeftBehind %d, counted %d, want pending on 0 counted pods",
					v.State, v, v.LeftBehind, v.Counted())
			}
			// The replacement, of the same ReplicaSet, or of a newer one
			// (the pod left behind in the old one is no rollout going on).
			for _, hash := range []string{"h1", "h2"} {
				e.Observe("default/web-"+hash+"-b", newPod("web-"+hash+"-b", inReplicaSet(hash), ready(), phase(corev1.PodRunning)), false)
			}
			e.Forget("default/web-h1-b")
			if until == "completed" {
				return // a running replacement is not completed
			}
			if v := e.Verdict(); v.State != Met || v.Rollouts != 0 {
				t.Fatalf("with a ready replacement: %v (%s), rollouts %d, want met", v.State, v, v.Rollouts)
			}
			if !strings.Contains(e.Verdict().String(), "not counting 1 failed pod left behind and replaced") {
				t.Errorf("the reason does not say the pod left behind is not counted: %s", e.Verdict())
			}
		})
	}
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
	}{
		{"bare pod", newPod("p", evicted())},
		{"Job pod", newPod("p", ownedBy("batch/v1", "Job", "migrate"), evicted())},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := NewEvaluator(untilSpec("ready"))
			e.Observe("default/p", c.pod, false)
			if v := e.Verdict(); v.State != Failed || v.Failure.Reason != ReasonFailed {
				t.Fatalf("verdict %v (%s), want failed with phase Failed", v.State, v)
			}
			if got := e.TakeLeftBehind(); len(got) != 0 {
				t.Errorf("named as left behind: %+v", got)
			}
		})
	}
}

// Evicted is among the known reasons: a user who asks to fail on it is
// not failed by a pod its controller replaced, nor by its containers.
func TestEvaluatorLeftBehindWithFailOnEvicted(t *testing.T) {
	spec := untilSpec("ready")
	spec.FailOn = []string{"Evicted", "Error", ReasonFailed}
	e := NewEvaluator(spec)
	e.Observe("default/a", newPod("a", ownedBy("apps/v1", "StatefulSet", "db"), evicted()), false)
	if v := e.Verdict(); v.State == Failed {
		t.Fatalf("failed on a pod left behind: %s", v)
	}
}

// --until gone waits for a pod left behind like any pod, and is not
// failed by it.
func TestEvaluatorLeftBehindUntilGone(t *testing.T) {
	e := NewEvaluator(untilSpec("gone"))
	e.Observe("default/a", newPod("a", inReplicaSet("h1"), evicted()), false)
	if v := e.Verdict(); v.State != Pending || v.LeftBehind != 0 {
		t.Fatalf("verdict %v (%s), LeftBehind %d: want pending, the pod is still there", v.State, v, v.LeftBehind)
	}
	e.Forget("default/a")
	if v := e.Verdict(); v.State != Met {
		t.Fatalf("verdict %v (%s) once the pod is gone, want met", v.State, v)
	}
}

// Each pod is named once, when it is first seen left behind; one deleted
// and created again is a new pod, named again.
func TestTakeLeftBehind(t *testing.T) {
	e := NewEvaluator(untilSpec("ready"))
	running := newPod("a", inReplicaSet("h1"), ready())
	e.Observe("default/a", running, true)
	if got := e.TakeLeftBehind(); len(got) != 0 {
		t.Fatalf("a running pod named: %+v", got)
	}
	pod := newPod("a", inReplicaSet("h1"), evicted())
	e.Observe("default/a", pod, false)
	e.Observe("default/a", pod, false)
	got := e.TakeLeftBehind()
	if len(got) != 1 || got[0].Name != "a" || got[0].Reason != "Evicted" || got[0].OwnerName != "web-h1" {
		t.Fatalf("named %+v, want the pod once", got)
	}
	e.Observe("default/a", pod, false)
	if got := e.TakeLeftBehind(); len(got) != 0 {
		t.Fatalf("named again: %+v", got)
	}
	e.Observe("default/a", newPod("a", uid("other"), inReplicaSet("h1"), shutDown()), false)
	got = e.TakeLeftBehind()
	if len(got) != 1 || got[0].Reason != "Terminated" || got[0].OwnerName != "web-h1" {
		t.Fatalf("named %+v, want the new pod once", got)
	}
	if l := e.LeftBehind(); len(l) != 1 || l[0].Reason != "Terminated" {
		t.Fatalf("LeftBehind %+v, want the shut-down pod", l)
	}
	e.Forget("default/a")
	if l := e.LeftBehind(); len(l) != 0 {
		t.Fatalf("LeftBehind %+v after the pod went", l)
	}
}
