package diagnose

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/diagnosis"
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
	oom := corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want diagnosis.Failure
		ok   bool
	}{
		{"running", testPod(status(corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})), diagnosis.Failure{}, false},
		{"creating", testPod(status(waitingFor("ContainerCreating"))), diagnosis.Failure{}, false},
		{"completed", testPod(status(corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}})), diagnosis.Failure{}, false},
		{"error", testPod(status(crashed(0))), diagnosis.Failure{Reason: "Error",
			Containers: []diagnosis.FailedContainer{{Name: "app", Reason: "Error", HasLog: true}}, Parts: []string{"app#0:Error"}}, true},
		{"crash loop", testPod(status(backOff(3))), diagnosis.Failure{Reason: "CrashLoopBackOff",
			Containers: []diagnosis.FailedContainer{{Name: "app", Reason: "CrashLoopBackOff", RestartCount: 3, HasLog: true, Previous: true}}, Parts: []string{"app#3:CrashLoopBackOff"}}, true},
		{"oom", testPod(status(oom)), diagnosis.Failure{Reason: "OOMKilled",
			Containers: []diagnosis.FailedContainer{{Name: "app", Reason: "OOMKilled", HasLog: true}}, Parts: []string{"app#0:OOMKilled"}}, true},
		{"image pull", testPod(status(waitingFor("ImagePullBackOff"))), diagnosis.Failure{Reason: "ImagePullBackOff",
			Containers: []diagnosis.FailedContainer{{Name: "app", Reason: "ImagePullBackOff"}}, Parts: []string{"app#0:ImagePullBackOff"}}, true},
		{"evicted", testPod(func(p *corev1.Pod) { p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Evicted" }),
			diagnosis.Failure{Reason: "Evicted", Parts: []string{"pod:Evicted"}}, true},
		{"unschedulable", testPod(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}}
		}), diagnosis.Failure{Reason: "Unschedulable", Parts: []string{"pod:Unschedulable"}}, true},
	}
	for _, c := range cases {
		got, ok := Of(c.pod)
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Of = %+v, %v; want %+v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// A failure is a container's restart count and reason: a crash is
// diagnosed when it ends (Error) and in CrashLoopBackOff, then not again
// until the next crash; reasons that alternate (ErrImagePull and
// ImagePullBackOff) are each diagnosed once.
func TestSeen(t *testing.T) {
	var s Seen
	errored, _ := Of(testPod(status(crashed(0))))
	backedOff, _ := Of(testPod(status(backOff(1))))
	pull, _ := Of(testPod(status(waitingFor("ErrImagePull"))))
	pullBackOff, _ := Of(testPod(status(waitingFor("ImagePullBackOff"))))
	if s.Covers("shop/web-1", "uid-1", errored) {
		t.Fatal("an empty Seen covers a failure")
	}
	s.Add("shop/web-1", "uid-1", errored)
	if !s.Covers("shop/web-1", "uid-1", errored) {
		t.Error("the same failure is not covered")
	}
	if s.Covers("shop/web-1", "uid-1", backedOff) {
		t.Error("CrashLoopBackOff after the crash is covered")
	}
	if s.Covers("shop/web-1", "uid-2", errored) {
		t.Error("a new pod under the same name is covered")
	}
	s.Add("shop/web-1", "uid-1", pull)
	s.Add("shop/web-1", "uid-1", pullBackOff)
	if !s.Covers("shop/web-1", "uid-1", pull) || !s.Covers("shop/web-1", "uid-1", pullBackOff) {
		t.Error("alternating image pull reasons are not covered")
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
