package check

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/podview"
)

// Status is the STATUS that `kubectl get pods` shows for pod, worked out on
// the client. The table output counts the server's own cell instead; this
// is for the outputs that ask the server for no table (-o json, templates),
// so that their summaries count pods by the same words. It follows the API
// server's pod printer as of Kubernetes 1.37: the pod's reason, then the
// first init container still at work, then the first container with a
// reason, then deletion.
func Status(pod *corev1.Pod) string {
	status := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		status = pod.Status.Reason
	}
	if c := podview.Condition(pod, corev1.PodScheduled); c != nil && c.Reason == corev1.PodReasonSchedulingGated {
		status = corev1.PodReasonSchedulingGated
	}
	init, initializing := initStatus(pod)
	if initializing {
		status = init
	}
	if !initializing || podview.ConditionStatus(pod, corev1.PodInitialized) == corev1.ConditionTrue {
		status = containersStatus(pod, status)
	}
	switch {
	case pod.DeletionTimestamp == nil:
	case pod.Status.Reason == "NodeLost":
		return "Unknown"
	case !podview.Finished(pod):
		return "Terminating"
	}
	return status
}

// initStatus names the first init container that keeps the pod from
// starting: Init:REASON, or Init:N/M while it runs. Sidecars (restartable
// init containers) that have started do not hold the pod back.
func initStatus(pod *corev1.Pod) (string, bool) {
	for i, cs := range pod.Status.InitContainerStatuses {
		t, w := cs.State.Terminated, cs.State.Waiting
		switch {
		case t != nil && t.ExitCode == 0:
			continue
		case isSidecar(pod, cs.Name) && cs.Started != nil && *cs.Started:
			continue
		case t != nil:
			return "Init:" + terminatedStatus(t), true
		case w != nil && w.Reason != "" && w.Reason != "PodInitializing":
			return "Init:" + w.Reason, true
		}
		return fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers)), true
	}
	return "", false
}

// containersStatus takes the reason of the first container that has one
// (a waiting reason, or how it terminated); a pod whose containers have
// all Completed but one still runs is Running (or NotReady), and one that
// ended with an error shows that error.
func containersStatus(pod *corev1.Pod, status string) string {
	running, failed := false, ""
	list := pod.Status.ContainerStatuses
	for i := len(list) - 1; i >= 0; i-- {
		cs := &list[i]
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			status = cs.State.Waiting.Reason
		case cs.State.Terminated != nil:
			status = terminatedStatus(cs.State.Terminated)
			if cs.State.Terminated.ExitCode != 0 {
				failed = status
			}
		case cs.Ready && cs.State.Running != nil:
			running = true
		}
	}
	if status != "Completed" {
		return status
	}
	switch {
	case running && podview.Ready(pod):
		return "Running"
	case failed != "":
		return failed
	case running:
		return "NotReady"
	}
	return status
}

func terminatedStatus(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	}
	return fmt.Sprintf("ExitCode:%d", t.ExitCode)
}

func isSidecar(pod *corev1.Pod, name string) bool {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.Name == name {
			return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		}
	}
	return false
}
