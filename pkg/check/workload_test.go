package check

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func ptr[T any](v T) *T { return &v }

type rolloutCase struct {
	name string
	obj  runtime.Object
	want TargetStatus
}

func runRolloutCases(t *testing.T, cases []rolloutCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := rolloutOf(tc.obj); got != tc.want {
				t.Errorf("rollout =\n  %+v\nwant\n  %+v", got, tc.want)
			}
		})
	}
}

// rolloutOf is the kind's rule of obj (package target's table picks it
// by kind for the run).
func rolloutOf(obj runtime.Object) TargetStatus {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return DeploymentRollout(o)
	case *appsv1.StatefulSet:
		return StatefulSetRollout(o)
	case *appsv1.DaemonSet:
		return DaemonSetRollout(o)
	case *batchv1.Job:
		return JobRollout(o)
	case *appsv1.ReplicaSet:
		return ReplicaSetRollout(o)
	}
	panic(fmt.Sprintf("no rule for %T", obj))
}

func deploy(gen, observed int64, want int32, st appsv1.DeploymentStatus, paused bool) *appsv1.Deployment {
	st.ObservedGeneration = observed
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Generation: gen},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr(want), Paused: paused},
		Status:     st,
	}
}

func TestDeploymentRollout(t *testing.T) {
	deadline := appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 1, Conditions: []appsv1.DeploymentCondition{{
		Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
		Message: `ReplicaSet "web-7c9b" has timed out progressing.`,
	}}}
	runRolloutCases(t, []rolloutCase{
		{"spec not observed yet", deploy(2, 1, 3, appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3}, false),
			TargetStatus{State: Pending, Message: "the Deployment controller has not observed generation 2 yet"}},
		{"progress deadline exceeded", deploy(2, 2, 3, deadline, false),
			TargetStatus{State: Failed, Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "web-7c9b" has timed out progressing.`}},
		{"replicas being updated", deploy(2, 2, 3, appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 1, AvailableReplicas: 3}, false),
			TargetStatus{State: Pending, Message: "1 of 3 replicas updated"}},
		{"old replicas left", deploy(2, 2, 3, appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 3, AvailableReplicas: 3}, false),
			TargetStatus{State: Pending, Message: "1 old replica pending termination"}},
		{"updated not available", deploy(2, 2, 3, appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 2}, false),
			TargetStatus{State: Pending, Message: "2 of 3 updated replicas available"}},
		{"rolled out", deploy(2, 2, 3, appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3}, false),
			TargetStatus{State: Met, Message: "rolled out 3/3"}},
		{"scaled to zero", deploy(2, 2, 0, appsv1.DeploymentStatus{}, false),
			TargetStatus{State: Met, Message: "rolled out 0/0"}},
		{"paused mid-rollout", deploy(3, 3, 3, appsv1.DeploymentStatus{Replicas: 3, AvailableReplicas: 3}, true),
			TargetStatus{State: Pending, Message: "paused mid-rollout: 0 of 3 replicas updated",
				Note: "deployment/web is paused mid-rollout (0 of 3 replicas updated); the check waits until it is resumed (kubectl rollout resume deployment/web)"}},
		{"paused after the rollout", deploy(3, 3, 1, appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}, true),
			TargetStatus{State: Met, Message: "rolled out 1/1"}},
	})
}

func sts(gen, observed int64, want int32, strategy appsv1.StatefulSetUpdateStrategy, st appsv1.StatefulSetStatus) *appsv1.StatefulSet {
	st.ObservedGeneration = observed
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db", Generation: gen},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr(want), UpdateStrategy: strategy},
		Status:     st,
	}
}

func rolling(partition int32) appsv1.StatefulSetUpdateStrategy {
	return appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr(partition)}}
}

func TestStatefulSetRollout(t *testing.T) {
	onDelete := appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	onDeleteNote := "statefulset/db updates its pods OnDelete: it is judged on its pods only (every one ready, whatever its revision)"
	runRolloutCases(t, []rolloutCase{
		{"never observed", sts(1, 0, 3, rolling(0), appsv1.StatefulSetStatus{}),
			TargetStatus{State: Pending, Message: "the StatefulSet controller has not observed generation 1 yet"}},
		{"pods not ready", sts(1, 1, 3, rolling(0), appsv1.StatefulSetStatus{ReadyReplicas: 1, CurrentRevision: "db-1", UpdateRevision: "db-1"}),
			TargetStatus{State: Pending, Message: "1 of 3 pods ready"}},
		{"new revision on one pod", sts(2, 2, 3, rolling(0), appsv1.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 1, CurrentRevision: "db-1", UpdateRevision: "db-2"}),
			TargetStatus{State: Pending, Message: "1 of 3 pods at revision db-2"}},
		{"update revision reached", sts(2, 2, 3, rolling(0), appsv1.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 3, CurrentRevision: "db-2", UpdateRevision: "db-2"}),
			TargetStatus{State: Met, Message: "rolled out 3/3 at revision db-2"}},
		{"rolled back mid-rollout", sts(3, 3, 3, rolling(0), appsv1.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 2, CurrentRevision: "db-1", UpdateRevision: "db-1"}),
			TargetStatus{State: Pending, Message: "2 of 3 pods at revision db-1"}},
		{"partition not reached", sts(2, 2, 3, rolling(2), appsv1.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 0, CurrentRevision: "db-1", UpdateRevision: "db-2"}),
			TargetStatus{State: Pending, Message: "0 of 1 pods at revision db-2 (partition 2)"}},
		{"partition reached", sts(2, 2, 3, rolling(2), appsv1.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 1, CurrentRevision: "db-1", UpdateRevision: "db-2"}),
			TargetStatus{State: Met, Message: "rolled out to the partition: 1 of 3 pods at revision db-2 (partition 2)"}},
		{"created with a partition", sts(1, 1, 3, rolling(2), appsv1.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 3, CurrentRevision: "db-1", UpdateRevision: "db-1"}),
			TargetStatus{State: Met, Message: "rolled out 3/3 at revision db-1"}},
		{"OnDelete, pods not ready", sts(2, 2, 2, onDelete, appsv1.StatefulSetStatus{ReadyReplicas: 1, CurrentRevision: "db-1", UpdateRevision: "db-2"}),
			TargetStatus{State: Pending, Message: "1 of 2 pods ready", Note: onDeleteNote}},
		{"OnDelete, old revision ready", sts(2, 2, 2, onDelete, appsv1.StatefulSetStatus{ReadyReplicas: 2, CurrentRevision: "db-1", UpdateRevision: "db-2"}),
			TargetStatus{State: Met, Message: "2/2 pods ready", Note: onDeleteNote}},
	})
}

func ds(gen, observed int64, strategy appsv1.DaemonSetUpdateStrategyType, st appsv1.DaemonSetStatus) *appsv1.DaemonSet {
	st.ObservedGeneration = observed
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "agent", Generation: gen},
		Spec:       appsv1.DaemonSetSpec{UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: strategy}},
		Status:     st,
	}
}

func TestDaemonSetRollout(t *testing.T) {
	ru, od := appsv1.RollingUpdateDaemonSetStrategyType, appsv1.OnDeleteDaemonSetStrategyType
	runRolloutCases(t, []rolloutCase{
		{"not observed", ds(2, 1, ru, appsv1.DaemonSetStatus{DesiredNumberScheduled: 3}),
			TargetStatus{State: Pending, Message: "the DaemonSet controller has not observed generation 2 yet"}},
		{"nodes without an updated pod", ds(2, 2, ru, appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, UpdatedNumberScheduled: 2, NumberReady: 3, NumberAvailable: 3}),
			TargetStatus{State: Pending, Message: "2 of 3 nodes have an updated pod"}},
		{"updated pod not available", ds(2, 2, ru, appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberReady: 2, NumberAvailable: 2}),
			TargetStatus{State: Pending, Message: "2 of 3 updated pods available"}},
		{"rolled out", ds(2, 2, ru, appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberReady: 3, NumberAvailable: 3}),
			TargetStatus{State: Met, Message: "rolled out on 3/3 nodes"}},
		{"no eligible node", ds(1, 1, ru, appsv1.DaemonSetStatus{}),
			TargetStatus{State: Met, Message: "rolled out on 0/0 nodes"}},
		{"OnDelete, ready on old revision", ds(2, 2, od, appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, UpdatedNumberScheduled: 0, NumberReady: 3}),
			TargetStatus{State: Met, Message: "a ready pod on 3/3 nodes",
				Note: "daemonset/agent updates its pods OnDelete: it is judged on its pods only (a ready pod on every node, whatever its revision)"}},
	})
}

func job(st batchv1.JobStatus, backoff *int32) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "migrate"},
		Spec:       batchv1.JobSpec{Completions: ptr(int32(1)), BackoffLimit: backoff},
		Status:     st,
	}
}

func jobCond(t batchv1.JobConditionType, reason, msg string) []batchv1.JobCondition {
	return []batchv1.JobCondition{{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg}}
}

func TestJobRollout(t *testing.T) {
	runRolloutCases(t, []rolloutCase{
		{"running", job(batchv1.JobStatus{Active: 1}, ptr(int32(6))),
			TargetStatus{State: Pending, Message: "0 of 1 completions, 1 active"}},
		{"retrying after a failed pod", job(batchv1.JobStatus{Active: 1, Failed: 1}, ptr(int32(6))),
			TargetStatus{State: Pending, Message: "0 of 1 completions, 1 active",
				Note: "job/migrate: 1 pod failed so far; the Job retries (backoffLimit 6), so the check goes on"}},
		{"complete", job(batchv1.JobStatus{Succeeded: 1, Failed: 2, Conditions: jobCond(batchv1.JobComplete, "", "")}, nil),
			TargetStatus{State: Met, Message: "complete: 1/1 succeeded"}},
		{"backoff limit exceeded", job(batchv1.JobStatus{Failed: 1, Conditions: jobCond(batchv1.JobFailed, "BackoffLimitExceeded", "Job has reached the specified backoff limit")}, ptr(int32(0))),
			TargetStatus{State: Failed, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}},
		{"failure target, pods still ending", job(batchv1.JobStatus{Active: 1, Conditions: jobCond(batchv1.JobFailureTarget, "DeadlineExceeded", "Job was active longer than specified deadline")}, nil),
			TargetStatus{State: Failed, Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline"}},
		{"indexed, retrying an index", indexedJob(batchv1.JobStatus{Active: 2, Failed: 1}, 1, ptr(int32(2))),
			TargetStatus{State: Pending, Message: "0 of 3 completions, 2 active",
				Note: "job/migrate: 1 pod failed so far; the Job retries each index up to 1 time (backoffLimitPerIndex 1, maxFailedIndexes 2), so the check goes on"}},
		{"indexed, no limit on failed indexes", indexedJob(batchv1.JobStatus{Active: 2, Failed: 2}, 3, nil),
			TargetStatus{State: Pending, Message: "0 of 3 completions, 2 active",
				Note: "job/migrate: 2 pods failed so far; the Job retries each index up to 3 times (backoffLimitPerIndex 3), so the check goes on"}},
		{"work queue running", workQueueJob(batchv1.JobStatus{Active: 3}),
			TargetStatus{State: Pending, Message: "a work queue of 3 pods: 0 succeeded, 3 active"}},
		{"work queue complete", workQueueJob(batchv1.JobStatus{Succeeded: 3, Conditions: jobCond(batchv1.JobComplete, "", "")}),
			TargetStatus{State: Met, Message: "complete: a work queue of 3 pods, 3 succeeded (COMPLETIONS 3/1 of 3)"}},
	})
}

func indexedJob(st batchv1.JobStatus, perIndex int32, maxFailed *int32) *batchv1.Job {
	j := job(st, ptr(int32(6)))
	mode := batchv1.IndexedCompletion
	j.Spec.CompletionMode, j.Spec.Completions = &mode, ptr(int32(3))
	j.Spec.BackoffLimitPerIndex, j.Spec.MaxFailedIndexes = &perIndex, maxFailed
	return j
}

func workQueueJob(st batchv1.JobStatus) *batchv1.Job {
	j := job(st, nil)
	j.Spec.Completions, j.Spec.Parallelism = nil, ptr(int32(3))
	return j
}

func TestReplicaSetRollout(t *testing.T) {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Generation: 1},
		Spec:       appsv1.ReplicaSetSpec{Replicas: ptr(int32(2))},
		Status:     appsv1.ReplicaSetStatus{ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 1},
	}
	done := rs.DeepCopy()
	done.Status.AvailableReplicas = 2
	runRolloutCases(t, []rolloutCase{
		{"pods not available", rs, TargetStatus{State: Pending, Message: "1 of 2 pods available"}},
		{"available", done, TargetStatus{State: Met, Message: "2/2 pods available"}},
	})
}
