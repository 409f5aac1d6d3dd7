package check

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	deploymentutil "k8s.io/kubectl/pkg/util/deployment"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
)

// The kinds a target can be; the API's own names.
const (
	TargetDeployment  = "Deployment"
	TargetStatefulSet = "StatefulSet"
	TargetDaemonSet   = "DaemonSet"
	TargetJob         = "Job"
	TargetCronJob     = "CronJob"
	TargetReplicaSet  = "ReplicaSet"
	TargetPod         = "Pod"
)

// Target is an object a check is about: a TYPE/NAME argument or an object
// of a manifest (-f).
type Target struct {
	// APIVersion is the group and version the object is read at, for the
	// kinds judged by their status (custom resources, Services, ...);
	// empty for the workload kinds and Pod, read at their own.
	APIVersion string
	// Kind is the API kind: Deployment, StatefulSet, DaemonSet, Job,
	// ReplicaSet, Pod, or any other kind the cluster serves.
	Kind string
	// Namespace is empty for a cluster-scoped object.
	Namespace string
	Name      string
}

// String is the target as kubectl names it: deployment/web, or with its
// group for a custom resource: rollout.argoproj.io/web.
func (t Target) String() string { return KindName(t.APIVersion, t.Kind) + "/" + t.Name }

// Generic says the target is judged by its status (see APIVersion).
func (t Target) Generic() bool { return t.APIVersion != "" }

// KindName is a kind as kubectl prints it before a name: "deployment", or
// "rollout.argoproj.io" for a kind of a group that Kubernetes does not
// serve itself.
func KindName(apiVersion, kind string) string {
	group, _, ok := strings.Cut(apiVersion, "/")
	if !ok || !strings.Contains(group, ".") || strings.HasSuffix(group, ".k8s.io") {
		return strings.ToLower(kind)
	}
	return strings.ToLower(kind) + "." + group
}

// TargetStatus is what a target's own object says about a check. For a
// built-in workload it is its kind's rollout rule (the Judge of its row in
// package target's table), judged the way `kubectl rollout status` and
// `kubectl wait --for=condition=Complete` judge it; for any other kind it
// is the object's health (pkg/health). The pods' own conditions are judged
// on top of it, by the Evaluator.
type TargetStatus struct {
	State State
	// Reason is the API's word for a failure: ProgressDeadlineExceeded,
	// BackoffLimitExceeded, DeadlineExceeded, ...
	Reason string
	// Message says in a few words where the rollout stands ("1 of 3
	// replicas updated"), what it reached ("rolled out 3/3") or why it
	// failed (the condition's message).
	Message string
	// Note is said once on stderr while it holds: a StatefulSet updated
	// OnDelete, a Deployment paused mid-rollout, a Job retrying failed pods.
	Note string
	// Rule says in a few words what decided the state, for objects that
	// are not built-in workloads (pkg/health): "kstatus" (the conventions
	// of sigs.k8s.io/cli-utils' kstatus), "health rule rules.yaml#2
	// (Rollout.argoproj.io)" (the second entry of a --health-rules file)
	// or "exists" (the object's existence alone). It is empty for a
	// built-in workload, which its kind's rollout rule above judges.
	Rule string
}

func pending(msg string) TargetStatus { return TargetStatus{State: Pending, Message: msg} }

// notObserved is the message of a workload whose controller has not acted
// on its newest spec yet: its status still describes the one before.
func notObserved(kind string, generation int64) TargetStatus {
	return pending(fmt.Sprintf("the %s controller has not observed generation %d yet", kind, generation))
}

func replicas(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}

// DeploymentRollout is `kubectl rollout status`'s rule: the controller has
// observed the newest spec, every desired replica is updated, no old
// replica is left (pods being deleted aside), and every updated replica
// is available (so ready). A Progressing condition with reason
// ProgressDeadlineExceeded fails it at once.
func DeploymentRollout(d *appsv1.Deployment) TargetStatus {
	st := d.Status
	if d.Generation > st.ObservedGeneration {
		return notObserved(TargetDeployment, d.Generation)
	}
	for _, c := range st.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == deploymentutil.TimedOutReason {
			return TargetStatus{State: Failed, Reason: c.Reason, Message: c.Message}
		}
	}
	want := replicas(d.Spec.Replicas)
	var msg string
	switch {
	case st.UpdatedReplicas < want:
		msg = fmt.Sprintf("%d of %d replicas updated", st.UpdatedReplicas, want)
	case st.Replicas > st.UpdatedReplicas:
		msg = fmt.Sprintf("%d old %s pending termination", st.Replicas-st.UpdatedReplicas, text.Plural(int(st.Replicas-st.UpdatedReplicas), "replica", "replicas"))
	case st.AvailableReplicas < st.UpdatedReplicas:
		msg = fmt.Sprintf("%d of %d updated replicas available", st.AvailableReplicas, st.UpdatedReplicas)
	default:
		return TargetStatus{State: Met, Message: fmt.Sprintf("rolled out %d/%d", st.UpdatedReplicas, want)}
	}
	if !d.Spec.Paused {
		return pending(msg)
	}
	return TargetStatus{
		State:   Pending,
		Message: "paused mid-rollout: " + msg,
		Note: fmt.Sprintf("deployment/%s is paused mid-rollout (%s); the check waits until it is resumed (kubectl rollout resume deployment/%s)",
			d.Name, msg, d.Name),
	}
}

// StatefulSetRollout is `kubectl rollout status`'s rule: the controller
// has observed the newest spec, every desired pod is ready, and at least
// replicas-partition pods run the update revision. The revisions' names
// are not compared: after a rollback mid-rollout the update revision is
// the current one again while a pod still runs the abandoned one, and only
// the count of updated pods tells. A StatefulSet updated OnDelete replaces
// pods only when someone deletes them, so only readiness is judged
// (kubectl rollout status refuses it).
func StatefulSetRollout(s *appsv1.StatefulSet) TargetStatus {
	st := s.Status
	if st.ObservedGeneration == 0 || s.Generation > st.ObservedGeneration {
		return notObserved(TargetStatefulSet, s.Generation)
	}
	want := replicas(s.Spec.Replicas)
	r := TargetStatus{State: Pending}
	if s.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		r.Note = fmt.Sprintf("statefulset/%s updates its pods OnDelete: it is judged on its pods only (every one ready, whatever its revision)", s.Name)
	}
	if st.ReadyReplicas < want {
		r.Message = fmt.Sprintf("%d of %d pods ready", st.ReadyReplicas, want)
		return r
	}
	if r.Note != "" {
		r.State, r.Message = Met, fmt.Sprintf("%d/%d pods ready", st.ReadyReplicas, want)
		return r
	}
	var partition int32
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		partition = min(*ru.Partition, want)
	}
	if st.UpdatedReplicas < want-partition {
		r.Message = fmt.Sprintf("%d of %d pods at revision %s", st.UpdatedReplicas, want-partition, st.UpdateRevision)
		if partition > 0 {
			r.Message += fmt.Sprintf(" (partition %d)", partition)
		}
		return r
	}
	r.State = Met
	r.Message = fmt.Sprintf("rolled out %d/%d at revision %s", want, want, st.UpdateRevision)
	if st.UpdatedReplicas < want {
		r.Message = fmt.Sprintf("rolled out to the partition: %d of %d pods at revision %s (partition %d)", st.UpdatedReplicas, want, st.UpdateRevision, partition)
	}
	return r
}

// DaemonSetRollout: every node that should run the DaemonSet runs an
// updated pod, and it is available (so ready). Updated OnDelete, only
// readiness on every node is judged.
func DaemonSetRollout(ds *appsv1.DaemonSet) TargetStatus {
	st := ds.Status
	if ds.Generation > st.ObservedGeneration {
		return notObserved(TargetDaemonSet, ds.Generation)
	}
	want := st.DesiredNumberScheduled
	r := TargetStatus{State: Pending}
	if ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
		r.Note = fmt.Sprintf("daemonset/%s updates its pods OnDelete: it is judged on its pods only (a ready pod on every node, whatever its revision)", ds.Name)
		if st.NumberReady < want {
			r.Message = fmt.Sprintf("%d of %d nodes have a ready pod", st.NumberReady, want)
			return r
		}
		r.State, r.Message = Met, fmt.Sprintf("a ready pod on %d/%d nodes", st.NumberReady, want)
		return r
	}
	switch {
	case st.UpdatedNumberScheduled < want:
		r.Message = fmt.Sprintf("%d of %d nodes have an updated pod", st.UpdatedNumberScheduled, want)
	case st.NumberAvailable < want:
		r.Message = fmt.Sprintf("%d of %d updated pods available", st.NumberAvailable, want)
	default:
		r.State, r.Message = Met, fmt.Sprintf("rolled out on %d/%d nodes", st.UpdatedNumberScheduled, want)
	}
	return r
}

// JobRollout: Complete=True meets it, as `kubectl wait
// --for=condition=Complete` does; Failed=True (or FailureTarget=True,
// which the controller sets first, while it ends the remaining pods)
// fails it at once with the condition's reason. Pods that failed while the
// Job still retries are not a failure: the Note says so.
func JobRollout(j *batchv1.Job) TargetStatus {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobFailed, batchv1.JobFailureTarget:
			return TargetStatus{State: Failed, Reason: c.Reason, Message: c.Message}
		case batchv1.JobComplete:
			return TargetStatus{State: Met, Message: "complete: " + completedText(j)}
		}
	}
	r := pending(fmt.Sprintf("%d of %d completions, %d active", j.Status.Succeeded, completions(j), j.Status.Active))
	if workQueue(j) {
		r.Message = fmt.Sprintf("a work queue of %d pods: %d succeeded, %d active", *j.Spec.Parallelism, j.Status.Succeeded, j.Status.Active)
	}
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		r.Message = "suspended: " + r.Message
	}
	if j.Status.Failed > 0 {
		r.Note = fmt.Sprintf("job/%s: %d %s failed so far; the Job %s, so the check goes on",
			j.Name, j.Status.Failed, text.Plural(int(j.Status.Failed), "pod", "pods"), retryText(j))
	}
	return r
}

// completedText says what a complete Job did. A work queue (no
// completions, parallelism above 1) ends when one pod succeeds and the
// rest stop, so "3/1 succeeded" would read as an error: it is said in
// words, with the COMPLETIONS cell as `kubectl get job` prints it.
func completedText(j *batchv1.Job) string {
	if workQueue(j) {
		return fmt.Sprintf("a work queue of %d pods, %d succeeded (COMPLETIONS %d/1 of %d)",
			*j.Spec.Parallelism, j.Status.Succeeded, j.Status.Succeeded, *j.Spec.Parallelism)
	}
	return fmt.Sprintf("%d/%d succeeded", j.Status.Succeeded, completions(j))
}

// retryText names the limit the Job controller applies to failed pods:
// the per-index one of an Indexed Job that sets it, else backoffLimit.
func retryText(j *batchv1.Job) string {
	if perIndex := j.Spec.BackoffLimitPerIndex; perIndex != nil {
		limit := fmt.Sprintf("backoffLimitPerIndex %d", *perIndex)
		if j.Spec.MaxFailedIndexes != nil {
			limit += fmt.Sprintf(", maxFailedIndexes %d", *j.Spec.MaxFailedIndexes)
		}
		return fmt.Sprintf("retries each index up to %d %s (%s)", *perIndex, text.Plural(int(*perIndex), "time", "times"), limit)
	}
	if j.Spec.BackoffLimit == nil {
		return "retries (no backoffLimit)"
	}
	return fmt.Sprintf("retries (backoffLimit %d)", *j.Spec.BackoffLimit)
}

func workQueue(j *batchv1.Job) bool {
	return j.Spec.Completions == nil && j.Spec.Parallelism != nil && *j.Spec.Parallelism > 1
}

func completions(j *batchv1.Job) int32 {
	if j.Spec.Completions == nil {
		return 1
	}
	return *j.Spec.Completions
}

// ReplicaSetRollout: a ReplicaSet of its own has no rollout; its pods are
// judged as any pods, and it is met once the controller has observed its
// spec and every desired pod is available.
func ReplicaSetRollout(rs *appsv1.ReplicaSet) TargetStatus {
	st := rs.Status
	if rs.Generation > st.ObservedGeneration {
		return notObserved(TargetReplicaSet, rs.Generation)
	}
	want := replicas(rs.Spec.Replicas)
	if st.AvailableReplicas < want {
		return pending(fmt.Sprintf("%d of %d pods available", st.AvailableReplicas, want))
	}
	return TargetStatus{State: Met, Message: fmt.Sprintf("%d/%d pods available", st.AvailableReplicas, want)}
}

// CronJobStatus is kstatus's rule for a CronJob: it is met once it exists,
// whatever its schedule (sigs.k8s.io/cli-utils' kstatus holds a CronJob
// always Current; `kubectl rollout status` has no rule for it). Its pods,
// those of its Jobs, are judged as any pods. A suspended CronJob starts no
// Job: the Note says so.
func CronJobStatus(c *batchv1.CronJob) TargetStatus {
	r := TargetStatus{State: Met, Message: fmt.Sprintf("exists, %d active %s", len(c.Status.Active), text.Plural(len(c.Status.Active), "job", "jobs"))}
	if c.Spec.Suspend != nil && *c.Spec.Suspend {
		r.Message = "suspended: " + r.Message
		r.Note = fmt.Sprintf("cronjob/%s is suspended: it starts no Job until spec.suspend is false", c.Name)
	}
	return r
}
