package output

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/ghactions"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

func failedSummary() check.Summary {
	events := []corev1.Event{
		summaryEvent("BackOff", 30*time.Second, 12),
		{Type: "Normal", Reason: "Pulled", Message: "Successfully pulled image \"nginx\"\nin 1s", Count: 1,
			LastTimestamp: metav1.NewTime(summaryNow.Add(-2 * time.Minute))},
	}
	return check.Summary{
		Verdict:     "failed",
		ExitCode:    4,
		Duration:    2140 * time.Millisecond,
		Pods:        3,
		Statuses:    map[string]int{"Running": 2, "CrashLoopBackOff": 1},
		Events:      map[string]int{"SYNC": 3, "UPDATE": 5},
		EventTypes:  podTypes,
		Reason:      `pod default/web-1: container "app" is CrashLoopBackOff: back-off 10s restarting failed container=app`,
		Unsatisfied: []check.PodExplanation{check.ExplainAt(summaryNow, crashPod(), mustConditions("ready"), events)},
		Omitted:     2,
	}
}

func TestWriteText(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSummaryText(&buf, failedSummary()); err != nil {
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
	s := check.Summary{Verdict: "met", Duration: 350 * time.Millisecond, Events: map[string]int{"SYNC": 1, "RELIST": 2}, EventTypes: podTypes}
	if err := WriteSummaryText(&buf, s); err != nil {
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
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 2,
				Message: strings.Repeat("line of log\n", 100)}}}}},
	}
	var buf bytes.Buffer
	s := check.Summary{Verdict: "not met", ExitCode: 3, Unsatisfied: []check.PodExplanation{check.ExplainAt(summaryNow, pod, nil, nil)}}
	if err := WriteSummaryText(&buf, s); err != nil {
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
	if err := WriteSummaryJSON(&buf, failedSummary()); err != nil {
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
	if err := WriteSummaryJSON(&buf, (check.Summary{Verdict: "done", EventTypes: podTypes})); err != nil {
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
		"text": func() error { return WriteSummaryText(failingWriter{}, s) },
		"json": func() error { return WriteSummaryJSON(failingWriter{}, s) },
	} {
		err := write()
		if err == nil || !strings.Contains(err.Error(), "writing summary: disk full") {
			t.Errorf("%s: error = %v, want wrapped write error", name, err)
		}
	}
}

func contextsSummary() check.Summary {
	x := check.Explain(crashPod(), nil, nil)
	x.Context = "prod-us"
	return check.Summary{
		Verdict: "failed", ExitCode: 4, Duration: 2 * time.Second, Pods: 4,
		Statuses: map[string]int{"Running": 3, "CrashLoopBackOff": 1}, Events: map[string]int{"SYNC": 4}, EventTypes: podTypes,
		Reason:      "context prod-us: pod shop/web-1 is CrashLoopBackOff",
		Unsatisfied: []check.PodExplanation{x},
		Contexts: []check.ContextSummary{
			{Name: "prod-eu", Verdict: "met", Pods: 3, Reason: "all 3 matching pods satisfy ready"},
			{Name: "prod-us", Verdict: "failed", Pods: 1, Reason: "pod shop/web-1 is CrashLoopBackOff"},
			{Name: "staging", Verdict: "failed", Pods: 0, Reason: "unavailable: list pods at https://10.0.0.1:6443: connection refused"},
		},
	}
}

// The text summary has a line per context, aligned, between the total's
// reason and its pods, and names the context of each explained pod.
func TestSummaryTextContexts(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSummaryText(&b, contextsSummary()); err != nil {
		t.Fatal(err)
	}
	want := "Verdict:  failed (exit 4) after 2s\n" +
		"Reason:   context prod-us: pod shop/web-1 is CrashLoopBackOff\n" +
		"Contexts: prod-eu  met     3 pods  all 3 matching pods satisfy ready\n" +
		"          prod-us  failed  1 pod   pod shop/web-1 is CrashLoopBackOff\n" +
		"          staging  failed  0 pods  unavailable: list pods at https://10.0.0.1:6443: connection refused\n" +
		"Pods:     4 matched (CrashLoopBackOff 1, Running 3)\n"
	if !strings.HasPrefix(b.String(), want) {
		t.Errorf("got\n%s\nwant it to start with\n%s", b.String(), want)
	}
	if !strings.Contains(b.String(), "Pod default/web-1 in context prod-us is not satisfied:\n") {
		t.Errorf("the explained pod does not name its context:\n%s", b.String())
	}
}

// The JSON summary lists the contexts as [{name, verdict, pods, reason}]
// and the context of each unsatisfied pod; with one context neither shows.
func TestSummaryJSONContexts(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSummaryJSON(&b, contextsSummary()); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Contexts    []check.ContextSummary `json:"contexts"`
		Unsatisfied []struct {
			Context string `json:"context"`
		} `json:"unsatisfied"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Contexts, contextsSummary().Contexts) || len(got.Unsatisfied) != 1 || got.Unsatisfied[0].Context != "prod-us" {
		t.Errorf("contexts %+v, unsatisfied %+v", got.Contexts, got.Unsatisfied)
	}
	if !strings.Contains(b.String(), `{"name":"staging","verdict":"failed","pods":0,"reason":"unavailable: `) {
		t.Errorf("pods 0 left out or fields renamed: %s", b.String())
	}
	one := contextsSummary()
	one.Contexts, one.Unsatisfied[0].Context = nil, ""
	b.Reset()
	if err := WriteSummaryJSON(&b, one); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `"contexts":`) || strings.Contains(b.String(), `"context":`) {
		t.Errorf("a summary of one context names contexts: %s", b.String())
	}
}

// A context's name comes from a kubeconfig, maybe a shared one: it is
// escaped like text from the cluster, and the columns still align.
func TestSummaryTextContextNamesEscaped(t *testing.T) {
	s := check.Summary{Verdict: "met", Contexts: []check.ContextSummary{
		{Name: "prod\x1b[31m\n::error::x", Verdict: "met", Pods: 1, Reason: "ok"},
		{Name: "eu", Verdict: "met", Pods: 1, Reason: "ok"},
	}}
	var b bytes.Buffer
	if err := WriteSummaryText(&b, s); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsAny(out, "\x1b") || strings.Contains(out, "\n::error") {
		t.Errorf("a context name reaches the terminal raw:\n%q", out)
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 3 || strings.Index(lines[1], "met") != strings.Index(lines[2], "met") {
		t.Errorf("columns do not align:\n%s", out)
	}
}
func TestLeftBehindInSummary(t *testing.T) {
	one := []check.LeftBehindPod{{Namespace: "shop", Name: "web-1", Reason: "Evicted", OwnerKind: "ReplicaSet", OwnerName: "web"}}
	two := append(slices.Clone(one), check.LeftBehindPod{Namespace: "shop", Name: "db-0", Reason: "Terminated", OwnerKind: "StatefulSet", OwnerName: "db", Context: "prod"})
	for _, c := range []struct {
		pods []check.LeftBehindPod
		want string
	}{
		{one, "Replaced: 1 evicted pod left behind, replaced, not judged: shop/web-1\n"},
		{two, "Replaced: 2 pods left behind (1 evicted, 1 shut down), replaced, not judged: shop/web-1, shop/db-0 (context prod)\n"},
	} {
		var b bytes.Buffer
		s := check.Summary{Verdict: "met", Pods: 3, LeftBehind: c.pods}
		if err := WriteSummaryText(&b, s); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "matched\n"+c.want) {
			t.Errorf("text summary:\n%s\nwant after the Pods line: %s", b.String(), c.want)
		}
		b.Reset()
		if err := WriteSummaryMarkdown(&b, s, ghactions.MaxStepSummary); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "Replaced: ") || !strings.Contains(b.String(), "shop/web-1") {
			t.Errorf("Markdown summary has no Replaced line:\n%s", b.String())
		}
	}
	var b bytes.Buffer
	if err := WriteSummaryJSON(&b, (check.Summary{LeftBehind: one})); err != nil {
		t.Fatal(err)
	}
	var got struct {
		LeftBehind []check.LeftBehindPod `json:"leftBehind"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil || len(got.LeftBehind) != 1 || got.LeftBehind[0] != one[0] {
		t.Errorf("JSON %s: leftBehind %+v (%v), want %+v", b.String(), got.LeftBehind, err, one)
	}
	b.Reset()
	_ = WriteSummaryJSON(&b, (check.Summary{}))
	if strings.Contains(b.String(), "leftBehind") {
		t.Errorf("JSON without pods left behind names them: %s", b.String())
	}
	many := make([]check.LeftBehindPod, 12)
	for i := range many {
		many[i] = check.LeftBehindPod{Namespace: "n", Name: "p", Reason: "Evicted"}
	}
	if got := leftBehindText(many); !strings.HasSuffix(got, ", and 2 more") || strings.Count(got, "n/p") != maxLeftBehindNames {
		t.Errorf("12 pods: %s", got)
	}
}
func TestSummaryTargets(t *testing.T) {
	s := check.Summary{
		Verdict: "failed", ExitCode: 4, Duration: 20 * time.Second, EventTypes: []string{"SYNC"},
		Targets: []check.TargetSummary{
			{Kind: "Deployment", Namespace: "shop", Name: "web", Verdict: check.TargetMet, Reason: "rolled out 3/3", Pods: 3, MetAfterSeconds: 14.23},
			{Kind: "Job", Namespace: "shop", Name: "migrate", Verdict: check.TargetFailed, Reason: "BackoffLimitExceeded: Job has reached the specified backoff limit", Pods: 1, ShowNamespace: true},
		},
	}
	var text bytes.Buffer
	if err := WriteSummaryText(&text, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Targets:  deployment/web: rolled out 3/3 in 14.2s\n",
		"          job/migrate -n shop: failed: BackoffLimitExceeded: Job has reached the specified backoff limit\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text summary has no %q:\n%s", want, text.String())
		}
	}
	var out bytes.Buffer
	if err := WriteSummaryJSON(&out, s); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Targets []map[string]any `json:"targets"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"kind": "Job", "namespace": "shop", "name": "migrate", "verdict": "failed",
		"reason": "BackoffLimitExceeded: Job has reached the specified backoff limit", "pods": 1.0}
	if len(got.Targets) != 2 || !reflect.DeepEqual(got.Targets[1], want) {
		t.Errorf("JSON targets = %v", got.Targets)
	}
	// A name from a manifest is shown escaped, as cluster text is.
	text.Reset()
	hostile := check.Summary{Verdict: "not met", ExitCode: 3, EventTypes: []string{"SYNC"}, Targets: []check.TargetSummary{
		{Kind: "Deployment", Namespace: "shop", Name: "w\a\b\u009b\u202ex", Verdict: check.TargetNotMet, Reason: "does not exist (yet)"},
	}}
	if err := WriteSummaryText(&text, hostile); err != nil {
		t.Fatal(err)
	}
	if want := "Targets:  deployment/w^G^H\\u009b\\u202ex: not met: does not exist (yet)\n"; !strings.Contains(text.String(), want) {
		t.Errorf("text summary has no %q:\n%s", want, text.String())
	}
	var none bytes.Buffer
	_ = WriteSummaryJSON(&none, check.Summary{Verdict: "met"})
	if strings.Contains(none.String(), "targets") {
		t.Errorf("a summary without targets has a targets field: %s", none.String())
	}
}

// A pod left behind is named once on stderr by how it ended.
func TestLeftBehindNote(t *testing.T) {
	for _, c := range []struct {
		reason, want string
	}{
		{"Evicted", "pod default/a was evicted and replaced by its ReplicaSet web-h1; not judged"},
		{"Terminated", "pod default/a was shut down and replaced by its ReplicaSet web-h1; not judged"},
		{"OOMKilled", "pod default/a failed (OOMKilled) and replaced by its ReplicaSet web-h1; not judged"},
		{"", "pod default/a failed and replaced by its ReplicaSet web-h1; not judged"},
	} {
		p := check.LeftBehindPod{Namespace: "default", Name: "a", Reason: c.reason, OwnerKind: "ReplicaSet", OwnerName: "web-h1"}
		if got := LeftBehindNote(p); got != c.want {
			t.Errorf("reason %q: %q, want %q", c.reason, got, c.want)
		}
	}
}

// A pod the scheduler cannot place shows the scheduler's message.
func TestWriteTextUnschedulable(t *testing.T) {
	msg := "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
	s := check.Summary{Unsatisfied: []check.PodExplanation{{Namespace: "shop", Name: "web-2", Phase: "Pending", Unschedulable: msg}}}
	var b bytes.Buffer
	if err := WriteSummaryText(&b, s); err != nil {
		t.Fatal(err)
	}
	if line := "  Scheduling: PodScheduled=False (Unschedulable: " + msg + ")\n"; !strings.Contains(b.String(), line) {
		t.Errorf("text has no %q:\n%s", line, b.String())
	}
}
