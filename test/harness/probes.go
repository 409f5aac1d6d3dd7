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

// ProbeFailed writes the Event a kubelet writes when a container's probe
// fails: a Warning, reason Unhealthy, about the container's field path,
// with message (e.g. "Readiness probe failed: HTTP probe failed with
// statuscode: 503").
func ProbeFailed(t testing.TB, cs kubernetes.Interface, pod *corev1.Pod, container, message string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: fmt.Sprintf("%s.%x", pod.Name, now.UnixNano())},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
			UID: pod.UID, FieldPath: "spec.containers{" + container + "}"},
		Type: corev1.EventTypeWarning, Reason: "Unhealthy", Message: message,
		Source:         corev1.EventSource{Component: "kubelet", Host: pod.Spec.NodeName},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "kubelet", ReportingInstance: pod.Spec.NodeName,
	}
	if _, err := cs.CoreV1().Events(pod.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Errorf("write an Unhealthy event of %s/%s: %v", pod.Namespace, pod.Name, err)
	}
}

// SetReady writes, through the status subresource, what a kubelet writes
// when a running pod's readiness probes pass: its containers ready, and
// ContainersReady and Ready True.
func SetReady(t testing.TB, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	SetReadyOf(t, cs, ns, name, 0)
}

// SetReadyOf is SetReady as a kubelet with pod generation tracking writes
// it: the status and both conditions say they are of generation gen (0
// leaves them as they are).
func SetReadyOf(t testing.TB, cs kubernetes.Interface, ns, name string, gen int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		for _, typ := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
			setCondition(&p.Status, corev1.PodCondition{Type: typ, Status: corev1.ConditionTrue, LastTransitionTime: now, ObservedGeneration: gen})
		}
		if gen != 0 {
			p.Status.ObservedGeneration = gen
		}
		for i := range p.Status.ContainerStatuses {
			p.Status.ContainerStatuses[i].Ready = true
		}
		_, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Errorf("make pod %s/%s ready: %v", ns, name, err)
	}
}
