package verdicts

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// kubectlRule is what `kubectl rollout status` (for a Job, `kubectl wait`
// on Complete and Failed) decides on one state of the object: "met",
// "failed" or "" (it waits). It restates kubectl's status viewers, so a
// state the kubectl process missed (it starts, lists and watches later
// than podsync on a busy machine) is still known to be one kubectl calls
// done.
func kubectlRule(u *unstructured.Unstructured) string {
	if isCR(u.GetKind()) {
		// An operator's own meaning (kubectl wait on one condition knows
		// nothing of the dialect).
		return crRule(u)
	}
	switch u.GetKind() {
	case "Deployment":
		var d appsv1.Deployment
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d) != nil {
			return ""
		}
		return deploymentRule(&d)
	case "StatefulSet":
		var s appsv1.StatefulSet
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s) != nil {
			return ""
		}
		return statefulSetRule(&s)
	case "DaemonSet":
		var ds appsv1.DaemonSet
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ds) != nil {
			return ""
		}
		return daemonSetRule(&ds)
	case "Job":
		var j batchv1.Job
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &j) != nil {
			return ""
		}
		return jobRule(&j)
	}
	return ""
}

func deploymentRule(d *appsv1.Deployment) string {
	st := d.Status
	if d.Generation > st.ObservedGeneration {
		return ""
	}
	for _, c := range st.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
			return "failed"
		}
	}
	if d.Spec.Replicas != nil && st.UpdatedReplicas < *d.Spec.Replicas || st.Replicas > st.UpdatedReplicas ||
		st.AvailableReplicas < st.UpdatedReplicas {
		return ""
	}
	return "met"
}

func statefulSetRule(s *appsv1.StatefulSet) string {
	st := s.Status
	if st.ObservedGeneration == 0 || s.Generation > st.ObservedGeneration {
		return ""
	}
	if s.Spec.Replicas != nil && st.ReadyReplicas < *s.Spec.Replicas {
		return ""
	}
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil && s.Spec.Replicas != nil {
		if st.UpdatedReplicas < *s.Spec.Replicas-*ru.Partition {
			return ""
		}
		return "met"
	}
	if st.UpdateRevision != st.CurrentRevision {
		return ""
	}
	return "met"
}

func daemonSetRule(ds *appsv1.DaemonSet) string {
	st := ds.Status
	if ds.Generation > st.ObservedGeneration || st.UpdatedNumberScheduled < st.DesiredNumberScheduled ||
		st.NumberAvailable < st.DesiredNumberScheduled {
		return ""
	}
	return "met"
}

func jobRule(j *batchv1.Job) string {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return "met"
		case batchv1.JobFailed:
			return "failed"
		}
	}
	return ""
}
