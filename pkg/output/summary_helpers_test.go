package output

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// The summary's tests explain pods made here, as a run would.

var summaryNow = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// podTypes are the message types of pod states, as the run lists them.
var podTypes = []string{"SYNC", "ADD", "UPDATE", "GONE"}

func summaryEvent(reason string, ago time.Duration, count int32) corev1.Event {
	return corev1.Event{
		Type: corev1.EventTypeWarning, Reason: reason, Message: reason + " message", Count: count,
		LastTimestamp: metav1.NewTime(summaryNow.Add(-ago)),
	}
}

// crashPod is a pod whose app container loops, behind a finished init container.
func crashPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1", UID: "uid-web-1"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init-db"}},
			Containers:     []corev1.Container{{Name: "app", Image: "nginx"}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse,
				Reason: "ContainersNotReady", Message: "containers with unready status: [app]"}},
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "init-db",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", RestartCount: 4,
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container=app"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}}},
		},
	}
}

func mustConditions(s string) []check.Condition {
	c, err := check.ParseConditions(s)
	if err != nil {
		panic(err)
	}
	return c
}
