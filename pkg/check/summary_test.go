package check

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var now = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func event(reason string, ago time.Duration, count int32) corev1.Event {
	return corev1.Event{
		Type: corev1.EventTypeWarning, Reason: reason, Message: reason + " message", Count: count,
		LastTimestamp: metav1.NewTime(now.Add(-ago)),
	}
}

// crashPod is a pod whose app container loops, behind a finished init container.
func crashPod() *corev1.Pod {
	return newPod("web-1", phase(corev1.PodRunning),
		initTerminated("init-db", "Completed", 0),
		cond(corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", "containers with unready status: [app]"),
		waiting("app", "CrashLoopBackOff", "back-off 10s restarting failed container=app", 4),
		func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
				Reason: "Error", ExitCode: 1,
			}
		})
}

func TestExplainEvents(t *testing.T) {
	micro := corev1.Event{Reason: "New", Type: "Normal", EventTime: metav1.NewMicroTime(now.Add(-10 * time.Second))}
	series := corev1.Event{Reason: "Series", Type: "Warning", Series: &corev1.EventSeries{
		Count: 7, LastObservedTime: metav1.NewMicroTime(now.Add(-20 * time.Second)),
	}}
	created := corev1.Event{Reason: "Created", ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-3 * time.Hour))}}
	first := corev1.Event{Reason: "First", FirstTimestamp: metav1.NewTime(now.Add(-2 * time.Hour))}
	events := []corev1.Event{
		event("Old", 50*time.Minute, 1), created, event("Newest", 5*time.Second, 12), micro,
		first, series, event("Mid", 5*time.Minute, 0),
	}
	before := append([]corev1.Event(nil), events...)

	got := ExplainAt(now, crashPod(), nil, events).Events
	var reasons []string
	for _, ev := range got {
		reasons = append(reasons, ev.Reason)
	}
	// Warnings first, then newest first.
	if want := []string{"Newest", "Series", "Mid", "Old", "New"}; !reflect.DeepEqual(reasons, want) {
		t.Fatalf("event order = %q, want %q", reasons, want)
	}
	want := EventExplanation{Type: "Warning", Reason: "Series", Count: 7, LastSeen: "2025-01-02T03:03:45Z", Age: "20s"}
	if got[1] != want {
		t.Errorf("series event = %+v, want %+v", got[1], want)
	}
	if got[2].Count != 1 || got[2].Age != "5m" || got[0].Count != 12 {
		t.Errorf("counts/ages = %+v", got)
	}
	if !reflect.DeepEqual(events, before) {
		t.Error("Explain reordered the caller's events")
	}
	noTime := ExplainAt(now, crashPod(), nil, []corev1.Event{{Reason: "X"}}).Events[0]
	if noTime.Age != "" || noTime.LastSeen != "" || noTime.Count != 1 {
		t.Errorf("event without time = %+v", noTime)
	}
}

func TestExplainConditions(t *testing.T) {
	pending := newPod("p", cond(corev1.PodScheduled, corev1.ConditionFalse, "Unschedulable", "0/3 nodes are available"))
	tests := []struct {
		conds string
		pod   *corev1.Pod
		want  []UnmetCondition
	}{
		{"ready", crashPod(), []UnmetCondition{{Condition: "ready", Want: "Ready=True", Got: "Ready=False",
			Reason: "ContainersNotReady", Message: "containers with unready status: [app]"}}},
		{"ready", pending, []UnmetCondition{{Condition: "ready", Want: "Ready=True", Got: "Ready not reported"}}},
		{"running", pending, []UnmetCondition{{Condition: "running", Want: "phase Running", Got: "phase Pending"}}},
		{"succeeded", pending, []UnmetCondition{{Condition: "succeeded", Want: "phase Succeeded", Got: "phase Pending"}}},
		{"completed", crashPod(), []UnmetCondition{{Condition: "completed", Want: "phase Succeeded or Failed", Got: "phase Running"}}},
		{"healthy", crashPod(), []UnmetCondition{{Condition: "healthy", Want: "Ready=True or phase Succeeded",
			Got: "Ready=False, phase Running", Reason: "ContainersNotReady", Message: "containers with unready status: [app]"}}},
		{"gone", pending, []UnmetCondition{{Condition: "gone", Want: "no pod", Got: "pod exists"}}},
		{"gone", newPod("d", deleting()), []UnmetCondition{{Condition: "gone", Want: "no pod", Got: "pod is being deleted"}}},
		{"condition=PodScheduled", pending, []UnmetCondition{{Condition: "condition=PodScheduled", Want: "PodScheduled=True",
			Got: "PodScheduled=False", Reason: "Unschedulable", Message: "0/3 nodes are available"}}},
		{"running,condition=Ready=False", newPod("ok", ready()), []UnmetCondition{{Condition: "condition=Ready=False",
			Want: "Ready=False", Got: "Ready=True"}}},
		{"running", newPod("ok", ready()), []UnmetCondition{}},
	}
	for _, tt := range tests {
		t.Run(tt.conds+"/"+tt.pod.Name, func(t *testing.T) {
			got := ExplainAt(now, tt.pod, mustConditions(tt.conds), nil).UnmetConditions
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("unmet = %+v\nwant    %+v", got, tt.want)
			}
		})
	}
}

func TestExplainContainers(t *testing.T) {
	pod := crashPod()
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "sidecar"})
	zero := int32(0)
	want := []ContainerExplanation{
		{Name: "init-db", Init: true, State: "terminated", Reason: "Completed", ExitCode: &zero},
		{Name: "app", State: "waiting", Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container=app",
			RestartCount: 4, LastTermination: &Termination{Reason: "Error", ExitCode: 1}},
		{Name: "sidecar", State: "unknown"},
	}
	got := ExplainAt(now, pod, nil, nil)
	if !reflect.DeepEqual(got.Containers, want) {
		t.Errorf("containers = %+v\nwant %+v", got.Containers, want)
	}
	if got.Namespace != "default" || got.Name != "web-1" || got.Phase != "Running" {
		t.Errorf("pod fields = %+v", got)
	}
	if ph := ExplainAt(now, newPod("x", phase("")), nil, nil).Phase; ph != "Unknown" {
		t.Errorf("empty phase explained as %q, want Unknown", ph)
	}
}

// Events that say the same thing fold into one, their counts added and
// the newest time kept.
func TestExplainEventsFolds(t *testing.T) {
	events := []corev1.Event{
		event("BackOff", 40*time.Second, 3),
		{Type: "Normal", Reason: "Pulled", Message: "pulled", Count: 1, LastTimestamp: metav1.NewTime(now.Add(-time.Second))},
		event("BackOff", 10*time.Second, 2),
		event("Failed", time.Minute, 1),
	}
	got := ExplainEvents(now, events)
	want := []EventExplanation{
		{Type: "Warning", Reason: "BackOff", Message: "BackOff message", Count: 5, LastSeen: "2025-01-02T03:03:55Z", Age: "10s"},
		{Type: "Warning", Reason: "Failed", Message: "Failed message", Count: 1, LastSeen: "2025-01-02T03:03:05Z", Age: "60s"},
		{Type: "Normal", Reason: "Pulled", Message: "pulled", Count: 1, LastSeen: "2025-01-02T03:04:04Z", Age: "1s"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ExplainEvents =\n%+v\nwant\n%+v", got, want)
	}
}

// A pod the scheduler cannot place leads the one-line reason with the
// scheduler's message; a pod that is placed leaves the reason alone.
func TestSchedulingReason(t *testing.T) {
	msg := "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
	stuck := newPod("web-2", phase(corev1.PodPending), cond(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonUnschedulable, msg))
	placed := newPod("web-1", phase(corev1.PodRunning), cond(corev1.PodScheduled, corev1.ConditionTrue, "", ""))
	ready := []Condition{{Keyword: KeywordReady}}
	s := Summary{Reason: "2 of 2 matching pods do not satisfy ready", Unsatisfied: []PodExplanation{
		ExplainAt(now, placed, ready, nil), ExplainAt(now, stuck, ready, nil)}}
	s.SchedulingReason()
	want := "pod " + stuck.Namespace + "/web-2 cannot be scheduled: " + msg + "; 2 of 2 matching pods do not satisfy ready"
	if s.Reason != want {
		t.Errorf("reason = %q, want %q", s.Reason, want)
	}
	if got := s.Unsatisfied[1].Unschedulable; got != msg {
		t.Errorf("unschedulable = %q, want the scheduler's message", got)
	}
	placedOnly := Summary{Reason: "1 of 1 matching pods do not satisfy ready", Unsatisfied: []PodExplanation{ExplainAt(now, placed, ready, nil)}}
	placedOnly.SchedulingReason()
	if placedOnly.Reason != "1 of 1 matching pods do not satisfy ready" {
		t.Errorf("a placed pod changed the reason: %q", placedOnly.Reason)
	}
}
