package diagnose

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testPod(opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", UID: "uid-1"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func status(cs corev1.ContainerStatus) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, cs) }
}

func crashed(restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "app", RestartCount: restarts,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}
}

func backOff(restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "app", RestartCount: restarts,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}
}

func waitingFor(reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

func TestOf(t *testing.T) {
	oom := corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", ContainerID: "containerd://abc"}}}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want Failure
		ok   bool
	}{
		{"running", testPod(status(corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})), Failure{}, false},
		{"creating", testPod(status(waitingFor("ContainerCreating"))), Failure{}, false},
		{"completed", testPod(status(corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}})), Failure{}, false},
		{"error", testPod(status(crashed(0))), Failure{Reason: "Error",
			Containers: []FailedContainer{{Name: "app", Reason: "Error", HasLog: true}}, Parts: []string{"app#0"}}, true},
		{"crash loop", testPod(status(backOff(3))), Failure{Reason: "CrashLoopBackOff",
			Containers: []FailedContainer{{Name: "app", Reason: "CrashLoopBackOff", RestartCount: 3, HasLog: true, Previous: true}}, Parts: []string{"app#2"}}, true},
		{"oom with id", testPod(status(oom)), Failure{Reason: "OOMKilled",
			Containers: []FailedContainer{{Name: "app", Reason: "OOMKilled", HasLog: true}}, Parts: []string{"app@containerd://abc"}}, true},
		{"image pull", testPod(status(waitingFor("ImagePullBackOff"))), Failure{Reason: "ImagePullBackOff",
			Containers: []FailedContainer{{Name: "app", Reason: "ImagePullBackOff"}}, Parts: []string{"app#0:waiting"}}, true},
		{"evicted", testPod(func(p *corev1.Pod) { p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Evicted" }),
			Failure{Reason: "Evicted", Parts: []string{"pod:Evicted"}}, true},
		{"unschedulable", testPod(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}}
		}), Failure{Reason: "Unschedulable", Parts: []string{"pod:Unschedulable"}}, true},
	}
	for _, c := range cases {
		got, ok := Of(c.pod)
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Of = %+v, %v; want %+v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// One crash is one failure: the instance that ended (Error) is the one
// CrashLoopBackOff's --previous log shows, so it is diagnosed once; the
// next crash is a new failure.
func TestSeenOneCrashOnce(t *testing.T) {
	var s Seen
	errored, _ := Of(testPod(status(crashed(0))))
	backedOff, _ := Of(testPod(status(backOff(1))))
	next, _ := Of(testPod(status(crashed(1))))
	if s.Covers("shop/web-1", "uid-1", errored) {
		t.Fatal("an empty Seen covers a failure")
	}
	s.Add("shop/web-1", "uid-1", errored)
	if !s.Covers("shop/web-1", "uid-1", backedOff) {
		t.Error("CrashLoopBackOff after the same crash is not covered")
	}
	if s.Covers("shop/web-1", "uid-1", next) {
		t.Error("the next crash is covered")
	}
	if s.Covers("shop/web-1", "uid-2", backedOff) {
		t.Error("a new pod under the same name is covered")
	}
	s.Forget("shop/web-1")
	if s.Covers("shop/web-1", "uid-1", errored) {
		t.Error("a forgotten pod is covered")
	}
}

func TestSeenBounded(t *testing.T) {
	var s Seen
	for i := range int32(100) {
		f, _ := Of(testPod(status(crashed(i))))
		s.Add("k", "u", f)
	}
	if n := len(s.pods["k"].parts); n != maxParts {
		t.Errorf("%d parts kept, want %d", n, maxParts)
	}
}
