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
}

// TestJudge picks each kind's rule from the table, as the run does.
func TestJudge(t *testing.T) {
	one := int32(1)
	for _, tc := range []struct {
		kind string
		obj  runtime.Object
		want check.Rollout
	}{
		{check.TargetDeployment, nil, check.Rollout{State: check.Pending, Message: "does not exist (yet)"}},
		{check.TargetDeployment, &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: &one}, Status: appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}},
			check.Rollout{State: check.Met, Message: "rolled out 1/1"}},
		{check.TargetReplicaSet, &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: &one}},
			check.Rollout{State: check.Pending, Message: "0 of 1 pods available"}},
		{check.TargetJob, &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"}}}},
			check.Rollout{State: check.Failed, Reason: "BackoffLimitExceeded"}},
		{check.TargetJob, &appsv1.Deployment{}, check.Rollout{State: check.Pending, Message: "*v1.Deployment has no rollout rule"}},
		{check.TargetPod, &corev1.Pod{}, check.Rollout{State: check.Pending, Message: "*v1.Pod has no rollout rule"}},
	} {
		if got := Judge(tc.kind, tc.obj); got != tc.want {
			t.Errorf("Judge(%s, %T) = %+v; want %+v", tc.kind, tc.obj, got, tc.want)
		}
	}
}
