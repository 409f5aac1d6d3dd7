package target

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// TestKindsTable holds every row to what the run reads of it: a resource
// the scheme knows for its kind, a client that lists its own type, and,
// for the kinds that make pods, a selector and a rule.
func TestKindsTable(t *testing.T) {
	for _, k := range kinds {
		gvk := k.Resource().GroupVersion().WithKind(k.Kind)
		if !scheme.Scheme.Recognizes(gvk) {
			t.Errorf("%s: the scheme does not know %s", k.Kind, gvk)
		}
		if got, ok := Lookup(k.Kind); !ok || got.GroupKind != k.GroupKind {
			t.Errorf("Lookup(%q) = %v, %v", k.Kind, got.GroupKind, ok)
		}
		for _, name := range k.Names {
			if got, ok := KindOf(name); !ok || got != k.Kind {
				t.Errorf("KindOf(%q) = %q, %v; want %q", name, got, ok, k.Kind)
			}
		}
		if k.Client.Object == nil {
			continue
		}
		if _, ok := k.Selector(k.Client.Object); !ok || k.Judge == nil {
			t.Errorf("%s: a kind that makes pods needs a selector and a rule", k.Kind)
		}
		list, err := k.Client.List(context.Background(), fake.NewClientset(), "shop", metav1.ListOptions{})
		if err != nil {
			t.Fatalf("%s: list: %v", k.Kind, err)
		}
		if gvks, _, err := scheme.Scheme.ObjectKinds(list); err != nil || gvks[0].Kind != k.Kind+"List" {
			t.Errorf("%s: the client lists %v (%v)", k.Kind, gvks, err)
		}
	}
	if via, ok := Lookup(check.TargetDeployment); !ok || via.Via != check.TargetReplicaSet {
		t.Errorf("a Deployment makes its pods through its ReplicaSets, got %q", via.Via)
	}
	if via, ok := Lookup(check.TargetCronJob); !ok || via.Via != check.TargetJob {
		t.Errorf("a CronJob makes its pods through its Jobs, got %q", via.Via)
	}
}

// TestJudge picks each kind's rule from the table, as the run does.
func TestJudge(t *testing.T) {
	one, suspended := int32(1), true
	for _, tc := range []struct {
		kind string
		obj  runtime.Object
		want check.TargetStatus
	}{
		{check.TargetDeployment, nil, check.TargetStatus{State: check.Pending, Message: "does not exist (yet)"}},
		{check.TargetDeployment, &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: &one}, Status: appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}},
			check.TargetStatus{State: check.Met, Message: "rolled out 1/1"}},
		{check.TargetReplicaSet, &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: &one}},
			check.TargetStatus{State: check.Pending, Message: "0 of 1 pods available"}},
		{check.TargetJob, &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"}}}},
			check.TargetStatus{State: check.Failed, Reason: "BackoffLimitExceeded"}},
		{check.TargetCronJob, &batchv1.CronJob{Status: batchv1.CronJobStatus{Active: []corev1.ObjectReference{{Name: "nightly-1"}}}},
			check.TargetStatus{State: check.Met, Message: "exists, 1 active job"}},
		{check.TargetCronJob, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly"}, Spec: batchv1.CronJobSpec{Suspend: &suspended}},
			check.TargetStatus{State: check.Met, Message: "suspended: exists, 0 active jobs",
				Note: "cronjob/nightly is suspended: it starts no Job until spec.suspend is false"}},
		{check.TargetJob, &appsv1.Deployment{}, check.TargetStatus{State: check.Pending, Message: "*v1.Deployment has no rollout rule"}},
		{check.TargetPod, &corev1.Pod{}, check.TargetStatus{State: check.Pending, Message: "*v1.Pod has no rollout rule"}},
	} {
		if got := Judge(tc.kind, tc.obj); got != tc.want {
			t.Errorf("Judge(%s, %T) = %+v; want %+v", tc.kind, tc.obj, got, tc.want)
		}
	}
}

// TestRevisions reads each kind's revision rule as the run does.
func TestRevisions(t *testing.T) {
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, UpdateRevision: "web-7d"}}
	onDelete := sts.DeepCopy()
	onDelete.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
	stale := sts.DeepCopy()
	stale.Generation = 3
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Status: appsv1.DaemonSetStatus{ObservedGeneration: 1}}
	for _, tc := range []struct {
		kind string
		obj  runtime.Object
		want Revision
	}{
		{check.TargetStatefulSet, sts, Revision{Current: "web-7d"}},
		{check.TargetStatefulSet, onDelete, Revision{OnDelete: true, Current: "web-7d"}},
		{check.TargetStatefulSet, stale, Revision{Settling: true, Current: "web-7d"}},
		{check.TargetDaemonSet, ds, Revision{Settling: true}},
		{check.TargetDaemonSet, sts, Revision{}},
	} {
		k, _ := Lookup(tc.kind)
		if got := k.Revisions.Of(tc.obj); got != tc.want {
			t.Errorf("%s %T: %+v; want %+v", tc.kind, tc.obj, got, tc.want)
		}
	}
	if d, _ := Lookup(check.TargetDeployment); d.Revisions.Template(&appsv1.Deployment{}) == nil || d.Revisions.Template(sts) != nil {
		t.Error("a Deployment's revisions are told by its pod template")
	}
	if ds, _ := Lookup(check.TargetDaemonSet); !ds.Revisions.History {
		t.Error("a DaemonSet's revision is its newest ControllerRevision's")
	}
}
