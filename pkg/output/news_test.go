package output

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/diagnosis"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
)

func shopEvent(name, typ, reason, message string, count int32) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: "shop", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web-1", UID: "uid-1"},
		Type:           typ, Reason: reason, Message: message, Count: count,
		LastTimestamp: metav1.NewTime(now.Add(-2 * time.Second)),
	}
}

func crashDiagnosis() *diagnosis.Diagnosis {
	return &diagnosis.Diagnosis{
		Kind:     diagnosis.Kind,
		Metadata: diagnosis.Meta{Name: "web-1", Namespace: "shop", UID: "uid-1"},
		Reason:   "CrashLoopBackOff",
		Containers: []diagnosis.Container{{Name: "app", Reason: "CrashLoopBackOff", RestartCount: 1, Logs: &check.LogTail{
			Previous: true,
			Lines:    []string{"starting\twith a tab", "\x1b]0;owned\x07\x1b[2J", "::error::spoofed", "Error: config missing"},
		}}},
		Events: []check.EventExplanation{
			{Type: "Warning", Reason: "BackOff", Message: "Back-off restarting failed container", Count: 2, LastSeen: "2026-12-02T11:59:58Z", Age: "2s"},
			{Type: "Normal", Reason: "Pulled", Message: "pulled", Count: 1},
		},
		Missing: []string{"events of the init container: gave up"},
	}
}

// newsStream is a pod crashing: its rows, its diagnosis and two Events.
func newsStream() []message.Message {
	crash := row("web-1", "0/1", "CrashLoopBackOff", "1 (2s ago)", "10.0.0.1", "3")
	return []message.Message{
		{Type: message.Sync, Key: shopKey("web-1"), Row: row("web-1", "0/1", "Running", "0", "10.0.0.1", "2")},
		{Type: message.Normal, Key: shopKey("web-1"), Event: shopEvent("web-1.1", "Normal", "Started", "Started container app", 1)},
		{Type: message.Update, Key: shopKey("web-1"), Row: crash},
		{Type: message.Diagnosis, Key: shopKey("web-1"), Row: crash, Diagnosis: crashDiagnosis()},
		{Type: message.Warning, Key: shopKey("web-1"), Event: shopEvent("web-1.2", "Warning", "BackOff", "Back-off restarting\tfailed \x1b[31mcontainer", 2)},
	}
}

func renderNews(t *testing.T, args []string, allNamespaces bool, token string) string {
	t.Helper()
	pf := get.NewGetPrintFlags()
	if err := newFlagCommand(pf).ParseFlags(args); err != nil {
		t.Fatalf("flags %v: %v", args, err)
	}
	var out bytes.Buffer
	w, err := New(Options{PrintFlags: pf, AllNamespaces: allNamespaces, Events: true, StopCommands: token, Out: &out, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range newsStream() {
		if err := w.Write(m); err != nil {
			t.Fatalf("Write %s: %v", m.Type, err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestNewsGolden(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		all   bool
		token string
	}{
		{"news-table", nil, false, ""},
		{"news-table-all-namespaces", nil, true, ""},
		{"news-table-github", nil, false, "TOKEN"},
		{"news-json", []string{"-o", "json"}, false, "TOKEN"},
		{"news-yaml", []string{"-o", "yaml"}, false, ""},
		{"news-name", []string{"-o", "name"}, false, ""},
		{"news-jsonpath", []string{"-o", `jsonpath={.kind} {.metadata.name}{"\n"}`}, false, "TOKEN"},
		{"news-custom-columns", []string{"-o", "custom-columns=KIND:.kind,NAME:.metadata.name,REASON:.reason"}, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := renderNews(t, tc.args, tc.all, tc.token)
			golden(t, tc.name, got)
			if strings.ContainsAny(got, "\x1b\x07") {
				t.Errorf("raw control characters in the output:\n%q", got)
			}
		})
	}
}

func TestNewsJSONExact(t *testing.T) {
	out := renderNews(t, []string{"-o", "json"}, false, "TOKEN")
	var types []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct {
			Type   string         `json:"type"`
			Object map[string]any `json:"object"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not JSON: %q: %v", line, err)
		}
		types = append(types, ev.Type)
		if ev.Type == "DIAGNOSIS" {
			lines := ev.Object["containers"].([]any)[0].(map[string]any)["logs"].(map[string]any)["lines"].([]any)
			if lines[1] != "\x1b]0;owned\x07\x1b[2J" {
				t.Errorf("log line not kept exactly: %q", lines[1])
			}
		}
	}
	if got := strings.Join(types, " "); got != "SYNC NORMAL UPDATE DIAGNOSIS WARNING" {
		t.Errorf("types %s", got)
	}
}

// A crash is diagnosed twice (ended, then in CrashLoopBackOff), usually
// with the same log: the table shows the log once, then only what is new
// (a new log, a Warning's higher count, a note not shown yet).
func TestDiagnosisTableShowsWhatIsNew(t *testing.T) {
	pf := get.NewGetPrintFlags()
	var out bytes.Buffer
	w, err := New(Options{PrintFlags: pf, Out: &out, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	first := crashDiagnosis()
	first.Events, first.Missing = nil, nil
	second := crashDiagnosis()
	third := crashDiagnosis()
	third.Containers[0].Logs = &check.LogTail{Previous: true, Lines: []string{"a new crash"}}
	for _, d := range []*diagnosis.Diagnosis{first, second, third} {
		if err := w.Write(message.Message{Type: message.Diagnosis, Key: shopKey("web-1"), Diagnosis: d}); err != nil {
			t.Fatal(err)
		}
	}
	want := `    web-1: container app (previous instance), last 4 log lines:
      starting    with a tab
      ^[]0;owned^G^[[2J
      ::error::spoofed
      Error: config missing
    web-1: Warning BackOff (x2): Back-off restarting failed container
    web-1: missing events of the init container: gave up
    web-1: container app (previous instance), last 1 log line:
      a new crash
`
	if got := out.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

// TestNewsNameTheirContext: with several contexts, a diagnosis and an
// Event name their context in every shape, as pod messages do, and the
// same pod's diagnoses are told apart per context.
func TestNewsNameTheirContext(t *testing.T) {
	stream := func() []message.Message {
		var out []message.Message
		for _, ctx := range twoContexts {
			for _, m := range newsStream() {
				m.Context = ctx
				out = append(out, m)
			}
		}
		return out
	}
	render := func(args ...string) string {
		pf := get.NewGetPrintFlags()
		if err := newFlagCommand(pf).ParseFlags(args); err != nil {
			t.Fatalf("flags %v: %v", args, err)
		}
		var out bytes.Buffer
		w, err := New(Options{PrintFlags: pf, Events: true, Contexts: twoContexts, Out: &out, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range stream() {
			if err := w.Write(m); err != nil {
				t.Fatalf("Write %s: %v", m.Type, err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	table := render()
	for _, ctx := range twoContexts {
		for _, want := range []string{
			"    " + ctx + " web-1: container app (previous instance), last 4 log lines:",
		} {
			if !strings.Contains(table, want) {
				t.Errorf("table lacks %q:\n%s", want, table)
			}
		}
		if !regexp.MustCompile(`(?m)^WARNING\s+` + ctx + `\s+web-1\s+BackOff \(x2\)`).MatchString(table) {
			t.Errorf("table has no WARNING row in context %s:\n%s", ctx, table)
		}
	}
	js := render("-o", "json")
	for _, kind := range []string{"DIAGNOSIS", "WARNING", "NORMAL"} {
		for _, ctx := range twoContexts {
			if !strings.Contains(js, `{"type":"`+kind+`","context":"`+ctx+`","object":`) {
				t.Errorf("json has no %s in context %s:\n%s", kind, ctx, js)
			}
		}
	}
	yaml := render("-o", "yaml")
	if n := strings.Count(yaml, "context: prod-eu\n"); n != 5 {
		t.Errorf("yaml names prod-eu %d times, want 5 (2 pod messages, 3 news):\n%s", n, yaml)
	}
	names := render("-o", "name")
	for _, want := range []string{"staging pod/web-1 diagnosed\n", "prod-eu event/web-1.2 warning\n", "staging event/web-1.1 normal\n"} {
		if !strings.Contains(names, want) {
			t.Errorf("-o name lacks %q:\n%s", want, names)
		}
	}
}
