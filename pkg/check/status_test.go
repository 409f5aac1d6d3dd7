package check

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func initRunning(name string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: name})
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{
			Name: name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		})
	}
}

func sidecarStarted(name string) podOpt {
	return func(p *corev1.Pod) {
		always, started := corev1.ContainerRestartPolicyAlways, true
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: name, RestartPolicy: &always})
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{
			Name: name, Started: &started, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		})
	}
}

// The words are those `kubectl get pods` shows (the API server's printer);
// the end-to-end suite also compares them with the server's cells on the
// local cluster.
func TestStatus(t *testing.T) {
	signal := func(p *corev1.Pod) {
		p.Status.ContainerStatuses[0].State.Terminated.Signal = 9
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"pending", newPod("p"), "Pending"},
		{"running", newPod("p", ready()), "Running"},
		{"crash loop", newPod("p", phase(corev1.PodRunning), waiting("app", "CrashLoopBackOff", "back-off", 3)), "CrashLoopBackOff"},
		{"image pull", newPod("p", waiting("app", "ImagePullBackOff", "", 0)), "ImagePullBackOff"},
		{"creating", newPod("p", waiting("app", "ContainerCreating", "", 0)), "ContainerCreating"},
		{"error", newPod("p", phase(corev1.PodFailed), terminated("app", "Error", 1)), "Error"},
		{"completed", newPod("p", phase(corev1.PodSucceeded), terminated("app", "Completed", 0)), "Completed"},
		{"exit code without reason", newPod("p", phase(corev1.PodFailed), terminated("app", "", 3)), "ExitCode:3"},
		{"signal without reason", newPod("p", phase(corev1.PodFailed), terminated("app", "", 137), signal), "Signal:9"},
		{"evicted", newPod("p", phase(corev1.PodFailed), podReason("Evicted", "low on memory")), "Evicted"},
		{"init running", newPod("p", initRunning("migrate")), "Init:0/1"},
		{"init failed", newPod("p", initTerminated("migrate", "Error", 1)), "Init:Error"},
		{"init crash loop", newPod("p", func(p *corev1.Pod) {
			initRunning("migrate")(p)
			p.Status.InitContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
		}), "Init:CrashLoopBackOff"},
		{"second init running", newPod("p", initTerminated("one", "Completed", 0), initRunning("two")), "Init:1/2"},
		{"started sidecar does not hold the pod", newPod("p", sidecarStarted("proxy"), ready()), "Running"},
		{"being deleted", newPod("p", ready(), deleting()), "Terminating"},
		{"deleted on a lost node", newPod("p", ready(), deleting(), podReason("NodeLost", "")), "Unknown"},
		{"completed pod being deleted", newPod("p", phase(corev1.PodSucceeded), terminated("app", "Completed", 0), deleting()), "Completed"},
		{"gated", newPod("p", cond(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonSchedulingGated, "")), "SchedulingGated"},
		{"one container completed, one running and ready", newPod("p", phase(corev1.PodRunning), cond(corev1.PodReady, corev1.ConditionTrue, "", ""),
			running("app", 0), terminated("log", "Completed", 0)), "Running"},
		{"one container completed, one running, pod not ready", newPod("p", phase(corev1.PodRunning),
			running("app", 0), terminated("log", "Completed", 0)), "NotReady"},
		{"first container completed, another failed: the failure shows", newPod("p", phase(corev1.PodFailed),
			terminated("app", "Completed", 0), terminated("log", "Error", 2)), "Error"},
		{"first container failed", newPod("p", phase(corev1.PodFailed), terminated("log", "Error", 2), terminated("app", "Completed", 0)), "Error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Status(tc.pod); got != tc.want {
				t.Errorf("Status = %q, want %q", got, tc.want)
			}
		})
	}
}
