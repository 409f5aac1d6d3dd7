// Package podview reads a pod's state the one way every package reads it:
// its conditions (matched as `kubectl wait` matches them), whether it is
// ready, finished or healthy, and why it cannot be scheduled. The check,
// the explanations and the diagnosis all ask here, so that "ready" means
// the same in a verdict, in the summary and in a diagnosis. The pod is
// only read.
package podview

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Condition returns the pod's condition of type t, matched
// case-insensitively as kubectl wait does, or nil.
func Condition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if strings.EqualFold(string(pod.Status.Conditions[i].Type), string(t)) {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// ConditionStatus is the status of the pod's condition of type t; empty
// when the pod does not report it, or reports it only for an older
// generation of the pod (see Stale).
func ConditionStatus(pod *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	if c := Condition(pod, t); c != nil && !Stale(pod, c) {
		return c.Status
	}
	return ""
}

// Stale says c speaks of an older generation of the pod than its
// metadata.generation, as kubectl wait --for=condition judges it: by c's
// own observedGeneration, or when c has none by the pod's
// status.observedGeneration, and only when one of them is set. A resize or
// a new activeDeadlineSeconds bumps the generation, and the kubelet's
// Ready=True of the previous spec must not count until it has seen the
// new one.
func Stale(pod *corev1.Pod, c *corev1.PodCondition) bool {
	observed := c.ObservedGeneration
	if observed == 0 {
		observed = pod.Status.ObservedGeneration
	}
	return observed != 0 && observed < pod.Generation
}

// Ready says the pod's Ready condition is True.
func Ready(pod *corev1.Pod) bool {
	return ConditionStatus(pod, corev1.PodReady) == corev1.ConditionTrue
}

// Finished says the pod has ended: phase Succeeded or Failed.
func Finished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// Healthy says the pod is Ready or has succeeded.
func Healthy(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || Ready(pod)
}

// Unschedulable is the pod's PodScheduled=False condition whose reason is
// Unschedulable (its message says why), or nil.
func Unschedulable(pod *corev1.Pod) *corev1.PodCondition {
	c := Condition(pod, corev1.PodScheduled)
	if c == nil || c.Status != corev1.ConditionFalse || c.Reason != corev1.PodReasonUnschedulable {
		return nil
	}
	return c
}
