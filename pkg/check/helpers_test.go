package check

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podOpt changes a test pod while it is built.
type podOpt func(*corev1.Pod)

// newPod builds a pod named name in namespace "default" with one
// container "app" in spec, then applies opts.
func newPod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func phase(ph corev1.PodPhase) podOpt {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}

func uid(u string) podOpt {
	return func(p *corev1.Pod) { p.UID = types.UID(u) }
}

func cond(t corev1.PodConditionType, s corev1.ConditionStatus, reason, msg string) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions,
			corev1.PodCondition{Type: t, Status: s, Reason: reason, Message: msg})
	}
}

// ready makes the pod Running with Ready=True and a running app container.
func ready() podOpt {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		cond(corev1.PodReady, corev1.ConditionTrue, "", "")(p)
		running("app", 0)(p)
	}
}

func status(cs corev1.ContainerStatus) podOpt {
	return func(p *corev1.Pod) {
		for i := range p.Status.ContainerStatuses {
			if p.Status.ContainerStatuses[i].Name == cs.Name {
				p.Status.ContainerStatuses[i] = cs
				return
			}
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, cs)
	}
}

func running(name string, restarts int32) podOpt {
	return status(corev1.ContainerStatus{
		Name: name, Ready: true, RestartCount: restarts,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
	})
}

func waiting(name, reason, msg string, restarts int32) podOpt {
	return status(corev1.ContainerStatus{
		Name: name, RestartCount: restarts,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}},
	})
}

func terminated(name, reason string, code int32) podOpt {
	return status(corev1.ContainerStatus{
		Name: name,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			Reason: reason, ExitCode: code,
		}},
	})
}

func initTerminated(name, reason string, code int32) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: name})
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{
			Name:  name,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code}},
		})
	}
}

func podReason(reason, msg string) podOpt {
	return func(p *corev1.Pod) { p.Status.Reason, p.Status.Message = reason, msg }
}

func deleting() podOpt {
	return func(p *corev1.Pod) {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	}
}

func mustConditions(s string) []Condition {
	c, err := ParseConditions(s)
	if err != nil {
		panic(err)
	}
	return c
}

// untilSpec is a validated Spec for --until s with default fail-on.
func untilSpec(s string) Spec {
	spec, err := Flags{Until: s, UntilSet: true, MinPods: Unset, MaxRestarts: Unset}.Spec()
	if err != nil {
		panic(err)
	}
	return spec
}
