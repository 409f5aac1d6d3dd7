package harness

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// Ending is how a kubelet ends a pod it will not run again: the pod's
// reason and message, and how its containers ended.
type Ending struct {
	Reason, Message string
	// ContainerReason and ExitCode are each container's terminated state.
	ContainerReason string
	ExitCode        int32
}

// The endings a kubelet writes.
var (
	// Evicted: node-pressure eviction; the containers are killed.
	Evicted = Ending{
		Reason: "Evicted",
		Message: "The node was low on resource: memory. Threshold quantity: 100Mi, available: 92160Ki. " +
			"Container app was using 1245Mi, request is 0, has larger consumption of memory. ",
		ContainerReason: "Error", ExitCode: 137,
	}
	// ShutDown: a graceful node shutdown (spot and preemptible nodes); the
	// containers end on SIGTERM.
	ShutDown = Ending{
		Reason: "Terminated", Message: "Pod was terminated in response to imminent node shutdown.",
		ContainerReason: "Completed", ExitCode: 0,
	}
)

// EndPod writes, through the status subresource, the status a kubelet
// writes when it ends the pod for good: phase Failed with the ending's
// reason and message, DisruptionTarget=True (TerminationByKubelet), not
// ready, every container terminated. A controller then sees it as a
// kubelet's work: a ReplicaSet makes a replacement and leaves the pod
// there; a StatefulSet or DaemonSet deletes it and makes another.
func EndPod(t testing.TB, cs kubernetes.Interface, ns, name string, how Ending) {
	t.Helper()
	if err := EndPodErr(cs, ns, name, how); err != nil {
		t.Fatal(err)
	}
}

// EndPodErr is EndPod returning its error, for callers to whom a pod gone
// in the meantime is part of the game.
func EndPodErr(cs kubernetes.Interface, ns, name string, how Ending) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ended(p, how)
		_, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("end pod %s/%s (%s): %w", ns, name, how.Reason, err)
	}
	return nil
}

// ended changes p's status as EndPod describes.
func ended(p *corev1.Pod, how Ending) {
	now := metav1.Now()
	st := &p.Status
	st.Phase, st.Reason, st.Message = corev1.PodFailed, how.Reason, how.Message
	setCondition(st, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "TerminationByKubelet", Message: how.Message, LastTransitionTime: now})
	for _, typ := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		setCondition(st, corev1.PodCondition{Type: typ, Status: corev1.ConditionFalse, Reason: "PodFailed", LastTransitionTime: now})
	}
	for i := range st.ContainerStatuses {
		c := &st.ContainerStatuses[i]
		var started metav1.Time
		if c.State.Running != nil {
			started = c.State.Running.StartedAt
		}
		c.Ready, c.Started = false, new(bool)
		c.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			Reason: how.ContainerReason, ExitCode: how.ExitCode, StartedAt: started, FinishedAt: now,
			ContainerID: c.ContainerID,
		}}
	}
}

// setCondition replaces the condition of c's type, or adds it.
func setCondition(st *corev1.PodStatus, c corev1.PodCondition) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == c.Type {
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}
