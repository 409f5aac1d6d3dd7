package check

import (
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2025, 1, 2, 3, 0, 0, 0, time.UTC)

// ofReplicaSet makes the pod one of Deployment deploy's ReplicaSet with
// template hash hash, created at t0+age.
func ofReplicaSet(deploy, hash string, created time.Duration) podOpt {
	return func(p *corev1.Pod) {
		yes := true
		p.Labels = map[string]string{"app": deploy, appsv1.DefaultDeploymentUniqueLabelKey: hash}
		p.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: deploy + "-" + hash, UID: types.UID("rs-" + hash), Controller: &yes,
		}}
		p.CreationTimestamp = metav1.NewTime(t0.Add(created))
	}
}

func TestDeploymentOf(t *testing.T) {
	yes := true
	tests := []struct {
		name string
		pod  *corev1.Pod
		dep  string
		rs   string
		ok   bool
	}{
		{"deployment pod", newPod("web-5d8f-x", ofReplicaSet("web", "5d8f", 0)), "default/web", "web-5d8f", true},
		{"dashes in the name", newPod("my-web-app-5d8f-x", ofReplicaSet("my-web-app", "5d8f", 0)), "default/my-web-app", "my-web-app-5d8f", true},
		{"bare pod", newPod("p"), "", "", false},
		{"hash label without owner", newPod("p", func(p *corev1.Pod) { p.Labels = map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: "x"} }), "", "", false},
		{"replicaset not named after the hash", newPod("p", ofReplicaSet("web", "5d8f", 0), func(p *corev1.Pod) {
			p.OwnerReferences[0].Name = "hand-made"
		}), "", "", false},
		{"owner is not the controller", newPod("p", ofReplicaSet("web", "5d8f", 0), func(p *corev1.Pod) {
			p.OwnerReferences[0].Controller = nil
		}), "", "", false},
		{"statefulset pod", newPod("db-0", func(p *corev1.Pod) {
			p.Labels = map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: "abc"}
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db-abc", Controller: &yes}}
		}), "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dep, rs, _, ok := deploymentOf(tt.pod)
			if dep != tt.dep || rs != tt.rs || ok != tt.ok {
				t.Errorf("deploymentOf = %q %q %v, want %q %q %v", dep, rs, ok, tt.dep, tt.rs, tt.ok)
			}
		})
	}
}

// A rolling update with maxSurge 1, maxUnavailable 0: at every step all
// matching pods can be ready, yet the check is met only once the old
// ReplicaSet's pods are being deleted or gone.
func TestEvaluatorRollout(t *testing.T) {
	old := func(n string, opts ...podOpt) *corev1.Pod {
		return newPod(n, append([]podOpt{ofReplicaSet("web", "old1", 0), ready()}, opts...)...)
	}
	nu := func(n string, opts ...podOpt) *corev1.Pod {
		return newPod(n, append([]podOpt{ofReplicaSet("web", "new2", time.Hour)}, opts...)...)
	}
	e := NewEvaluator(untilSpec("healthy"))
	runSteps(t, e, []step{
		// Before the new ReplicaSet has a pod, pods alone cannot tell.
		{key: "default/web-old1-a", pod: old("web-old1-a"), initial: true, want: Met},
		{key: "default/web-old1-b", pod: old("web-old1-b"), initial: true, want: Met},
		{key: "default/web-new2-a", pod: nu("web-new2-a"), initial: true, want: Pending},
		// Every pod is ready, but two ReplicaSets of web match.
		{key: "default/web-new2-a", pod: nu("web-new2-a", ready()), want: Pending},
	})
	r := e.Verdict()
	if r.Rollouts != 1 || r.Unsatisfied != 0 || r.Counted() != 3 {
		t.Fatalf("mid-rollout verdict = %+v", r)
	}
	if got, want := r.String(), "3 matching pods satisfy healthy, but pods of more than one ReplicaSet match: 1 Deployment is still rolling out"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got, want := e.Reason(r), r.String()+": default/web (ReplicaSets web-new2 1 pod, web-old1 2 pods)"; got != want {
		t.Errorf("Reason() = %q, want %q", got, want)
	}
	if got, want := e.Rollouts(), []string{"default/web (ReplicaSets web-new2 1 pod, web-old1 2 pods)"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Rollouts() = %q, want %q", got, want)
	}
	if got, want := e.UnsatisfiedKeys(), []string{"default/web-old1-a", "default/web-old1-b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("UnsatisfiedKeys() = %q, want the old ReplicaSet's pods %q", got, want)
	}
	gap, ok := e.RolloutGap("default/web-old1-a")
	want := UnmetCondition{Condition: "rollout", Want: "only pods of ReplicaSet web-new2, the newest of Deployment web",
		Got: "pod of ReplicaSet web-old1, which is being replaced"}
	if !ok || gap != want {
		t.Errorf("RolloutGap(old) = %+v %v, want %+v", gap, ok, want)
	}
	if _, ok := e.RolloutGap("default/web-new2-a"); ok {
		t.Error("RolloutGap(new pod) reported a gap")
	}

	runSteps(t, e, []step{
		// The Deployment scales the old ReplicaSet down: pods being
		// deleted no longer count, not even as not ready.
		{key: "default/web-old1-a", pod: old("web-old1-a", deleting(), phase(corev1.PodRunning),
			cond(corev1.PodReady, corev1.ConditionFalse, "", "")), want: Pending},
		{key: "default/web-new2-b", pod: nu("web-new2-b"), want: Pending},
		{key: "default/web-new2-b", pod: nu("web-new2-b", ready()), want: Pending},
		{key: "default/web-old1-b", pod: old("web-old1-b", deleting()), want: Met},
		{key: "default/web-old1-a", want: Met},
		{key: "default/web-old1-b", want: Met},
	})
	if r := e.Verdict(); r.Rollouts != 0 || r.Pods != 2 || r.Leaving != 0 || len(e.workloads) != 1 {
		t.Errorf("after the rollout: %+v, %d workloads", r, len(e.workloads))
	}
	for k := range e.pods {
		e.Forget(k)
	}
	if len(e.workloads) != 0 {
		t.Errorf("workloads left after every pod went: %d", len(e.workloads))
	}
}

// A rollback makes the old ReplicaSet create pods again: it is then the
// newest.
func TestEvaluatorRollback(t *testing.T) {
	e := NewEvaluator(untilSpec("ready"))
	e.Observe("d/web-a-1", newPod("web-a-1", ofReplicaSet("web", "a", 0), ready()), true)
	e.Observe("d/web-b-1", newPod("web-b-1", ofReplicaSet("web", "b", time.Hour), ready()), true)
	e.Observe("d/web-a-2", newPod("web-a-2", ofReplicaSet("web", "a", 2*time.Hour), ready()), false)
	if got := e.UnsatisfiedKeys(); !reflect.DeepEqual(got, []string{"d/web-b-1"}) {
		t.Errorf("UnsatisfiedKeys() = %q, want the pod of the ReplicaSet rolled back from", got)
	}
}

// Two Deployments, and pods no Deployment manages, do not mix.
func TestEvaluatorRolloutsAreKeptApart(t *testing.T) {
	e := NewEvaluator(untilSpec("ready"))
	e.Observe("d/web-a-1", newPod("web-a-1", ofReplicaSet("web", "a", 0), ready()), true)
	e.Observe("d/api-b-1", newPod("api-b-1", ofReplicaSet("api", "b", 0), ready()), true)
	e.Observe("d/bare", newPod("bare", ready()), true)
	other := newPod("web-a-1", ofReplicaSet("web", "a", 0), ready())
	other.Namespace = "other"
	e.Observe("other/web-a-1", other, true)
	if r := e.Verdict(); r.State != Met || r.Rollouts != 0 {
		t.Errorf("verdict = %v %+v, want met without rollouts", r.State, r)
	}
}

// Without --until nothing is tracked, and gone waits for pods being
// deleted like any other.
func TestEvaluatorRolloutNotTracked(t *testing.T) {
	e := NewEvaluator(Spec{MinPods: Unset, MaxRestarts: Unset})
	e.Observe("d/web-a-1", newPod("web-a-1", ofReplicaSet("web", "a", 0)), true)
	e.Observe("d/web-b-1", newPod("web-b-1", ofReplicaSet("web", "b", 0)), true)
	if r := e.Verdict(); r.Rollouts != 0 || len(e.workloads) != 0 {
		t.Errorf("without --until: %+v", r)
	}
	g := NewEvaluator(untilSpec("gone"))
	g.Observe("d/web-a-1", newPod("web-a-1", ofReplicaSet("web", "a", 0), deleting()), true)
	g.Observe("d/web-b-1", newPod("web-b-1", ofReplicaSet("web", "b", 0)), true)
	r := g.Verdict()
	if r.State != Pending || r.Leaving != 0 || r.Unsatisfied != 2 || r.Rollouts != 0 {
		t.Errorf("gone with a pod being deleted: %v %+v", r.State, r)
	}
}

func TestEvaluatorLeavingPods(t *testing.T) {
	spec := untilSpec("ready")
	spec.MinPods = 2
	e := NewEvaluator(spec)
	runSteps(t, e, []step{
		{key: "d/a", pod: newPod("a", ready()), initial: true, want: Pending},
		{key: "d/b", pod: newPod("b", ready(), deleting()), initial: true, want: Pending},
		{key: "d/c", pod: newPod("c", deleting()), initial: true, want: Pending},
		{key: "d/e", pod: newPod("e", ready()), want: Met},
	})
	r := e.Verdict()
	if r.Pods != 4 || r.Leaving != 2 || r.Counted() != 2 {
		t.Errorf("verdict = %+v", r)
	}
	if got, want := r.String(), "all 2 matching pods satisfy ready, not counting 2 being deleted"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := e.Statuses(); !reflect.DeepEqual(got, map[string]int{"Running": 2, "Terminating": 2}) {
		t.Errorf("Statuses() = %v", got)
	}
	// A pod whose deletion is cancelled (not possible in the API, but a
	// recreated pod under the same key) counts again.
	runSteps(t, e, []step{
		{key: "d/c", pod: newPod("c", uid("c2")), want: Pending},
		{key: "d/c", want: Met},
		{key: "d/b", want: Met},
		{key: "d/e", want: Pending},
	})
	if r := e.Verdict(); !strings.Contains(r.String(), "1 matching pods, want at least 2") {
		t.Errorf("String() = %q", r.String())
	}
}

func TestFailedPhaseMessage(t *testing.T) {
	e := NewEvaluator(untilSpec("succeeded"))
	e.Observe("ci/job-x", newPod("job-x", phase(corev1.PodFailed), terminated("app", "Error", 1)), false)
	r := e.Verdict()
	want := `pod ci/job-x has phase Failed: container "app" terminated with exit code 1 (Error)`
	if r.State != Failed || r.String() != want {
		t.Errorf("verdict = %v %q, want failed %q", r.State, r.String(), want)
	}
}
