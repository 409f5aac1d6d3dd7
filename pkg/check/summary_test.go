package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
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

// podTypes are the message types of pod states, as the run lists them.
var podTypes = []string{"SYNC", "ADD", "UPDATE", "GONE"}

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

func failedSummary() Summary {
	events := []corev1.Event{
		event("BackOff", 30*time.Second, 12),
		{Type: "Normal", Reason: "Pulled", Message: "Successfully pulled image \"nginx\"\nin 1s", Count: 1,
			LastTimestamp: metav1.NewTime(now.Add(-2 * time.Minute))},
	}
	return Summary{
		Verdict:     "failed",
		ExitCode:    4,
		Duration:    2140 * time.Millisecond,
		Pods:        3,
		Statuses:    map[string]int{"Running": 2, "CrashLoopBackOff": 1},
		Events:      map[string]int{"SYNC": 3, "UPDATE": 5},
		EventTypes:  podTypes,
		Reason:      `pod default/web-1: container "app" is CrashLoopBackOff: back-off 10s restarting failed container=app`,
		Unsatisfied: []PodExplanation{ExplainAt(now, crashPod(), mustConditions("ready"), events)},
		Omitted:     2,
	}
}

func TestWriteText(t *testing.T) {
	var buf bytes.Buffer
	if err := failedSummary().WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	want := `Verdict:  failed (exit 4) after 2.1s
Reason:   pod default/web-1: container "app" is CrashLoopBackOff: back-off 10s restarting failed container=app
Pods:     3 matched (CrashLoopBackOff 1, Running 2)
Events:   SYNC 3, ADD 0, UPDATE 5, GONE 0
Pod default/web-1 is not satisfied:
  Phase:  Running
  Unmet:  ready: want Ready=True, got Ready=False (ContainersNotReady: containers with unready status: [app])
  Init container init-db: terminated (Completed), exit code 0, ready false, restarts 0
  Container app: waiting (CrashLoopBackOff: back-off 10s restarting failed container=app), ready false, restarts 4; last terminated (Error), exit code 1
  Events (warnings first, newest first):
    30s ago  Warning  BackOff  x12  BackOff message
    2m ago  Normal  Pulled  x1  Successfully pulled image "nginx" in 1s
... and 2 more unsatisfied pods not shown
`
	if got := buf.String(); got != want {
		t.Errorf("WriteText:\n%s\nwant:\n%s", got, want)
	}
}

func TestWriteTextMet(t *testing.T) {
	var buf bytes.Buffer
	s := Summary{Verdict: "met", Duration: 350 * time.Millisecond, Events: map[string]int{"SYNC": 1, "RELIST": 2}, EventTypes: podTypes}
	if err := s.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	want := "Verdict:  met (exit 0) after 350ms\nPods:     0 matched\nEvents:   SYNC 1, ADD 0, UPDATE 0, GONE 0, RELIST 2\n"
	if got := buf.String(); got != want {
		t.Errorf("WriteText = %q, want %q", got, want)
	}
	if s.Events["ADD"] != 0 || len(s.Events) != 2 {
		t.Errorf("WriteText changed the caller's map: %v", s.Events)
	}
}

func TestWriteTextLongMessage(t *testing.T) {
	pod := newPod("p", terminated("app", "Error", 2), func(p *corev1.Pod) {
		p.Status.ContainerStatuses[0].State.Terminated.Message = strings.Repeat("line of log\n", 100)
	})
	var buf bytes.Buffer
	s := Summary{Verdict: "not met", ExitCode: 3, Unsatisfied: []PodExplanation{ExplainAt(now, pod, nil, nil)}}
	if err := s.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		if len([]rune(line)) > maxTextLen+100 {
			t.Errorf("line is %d runes long: %q", len([]rune(line)), line)
		}
	}
	if !strings.Contains(buf.String(), "line of log line of log") || !strings.Contains(buf.String(), "…") {
		t.Errorf("long message not folded and cut:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), "  Events: none\n") {
		t.Errorf("missing 'Events: none':\n%s", buf.String())
	}
}

func TestWriteJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := failedSummary().WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "}\n") {
		t.Fatalf("not exactly one line: %q", out)
	}
	for _, part := range []string{
		`{"verdict":"failed","exitCode":4,"durationSeconds":2.14,"pods":3,`,
		`"statuses":{"CrashLoopBackOff":1,"Running":2},`,
		`"events":{"ADD":0,"GONE":0,"SYNC":3,"UPDATE":5},`,
		`"reason":"pod default/web-1: container \"app\" is CrashLoopBackOff: back-off 10s restarting failed container=app",`,
		`"unsatisfied":[{"namespace":"default","name":"web-1","phase":"Running",`,
		`"unmetConditions":[{"condition":"ready","want":"Ready=True","got":"Ready=False","reason":"ContainersNotReady","message":"containers with unready status: [app]"}],`,
		`{"name":"init-db","init":true,"state":"terminated","ready":false,"reason":"Completed","exitCode":0,"restartCount":0}`,
		`{"name":"app","state":"waiting","ready":false,"reason":"CrashLoopBackOff","message":"back-off 10s restarting failed container=app","restartCount":4,"lastTermination":{"reason":"Error","exitCode":1}}`,
		`"events":[{"type":"Warning","reason":"BackOff","message":"BackOff message","count":12,"lastSeen":"2025-01-02T03:03:35Z","age":"30s"},`,
		`"message":"Successfully pulled image \"nginx\"\nin 1s"`,
		`"omitted":2}`,
	} {
		if !strings.Contains(out, part) {
			t.Errorf("JSON lacks %s\nin %s", part, out)
		}
	}
	var back map[string]any
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
}

func TestWriteJSONEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := (Summary{Verdict: "done", EventTypes: podTypes}).WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	want := `{"verdict":"done","exitCode":0,"durationSeconds":0,"pods":0,"statuses":{},"events":{"ADD":0,"GONE":0,"SYNC":0,"UPDATE":0},"unsatisfied":[]}` + "\n"
	if got := buf.String(); got != want {
		t.Errorf("WriteJSON = %s, want %s", got, want)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteErrors(t *testing.T) {
	s := failedSummary()
	for name, write := range map[string]func() error{
		"text": func() error { return s.WriteText(failingWriter{}) },
		"json": func() error { return s.WriteJSON(failingWriter{}) },
	} {
		err := write()
		if err == nil || !strings.Contains(err.Error(), "writing summary: disk full") {
			t.Errorf("%s: error = %v, want wrapped write error", name, err)
		}
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
	var b bytes.Buffer
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if line := "  Scheduling: PodScheduled=False (Unschedulable: " + msg + ")\n"; !strings.Contains(b.String(), line) {
		t.Errorf("text has no %q:\n%s", line, b.String())
	}
	placedOnly := Summary{Reason: "1 of 1 matching pods do not satisfy ready", Unsatisfied: []PodExplanation{ExplainAt(now, placed, ready, nil)}}
	placedOnly.SchedulingReason()
	if placedOnly.Reason != "1 of 1 matching pods do not satisfy ready" {
		t.Errorf("a placed pod changed the reason: %q", placedOnly.Reason)
	}
}
