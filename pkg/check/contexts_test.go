package check

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func contextsSummary() Summary {
	x := Explain(crashPod(), nil, nil)
	x.Context = "prod-us"
	return Summary{
		Verdict: "failed", ExitCode: 4, Duration: 2 * time.Second, Pods: 4,
		Statuses: map[string]int{"Running": 3, "CrashLoopBackOff": 1}, Events: map[string]int{"SYNC": 4}, EventTypes: podTypes,
		Reason:      "context prod-us: pod shop/web-1 is CrashLoopBackOff",
		Unsatisfied: []PodExplanation{x},
		Contexts: []ContextSummary{
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
	if err := contextsSummary().WriteText(&b); err != nil {
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
	if err := contextsSummary().WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Contexts    []ContextSummary `json:"contexts"`
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
	if err := one.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `"contexts":`) || strings.Contains(b.String(), `"context":`) {
		t.Errorf("a summary of one context names contexts: %s", b.String())
	}
}

// A context's name comes from a kubeconfig, maybe a shared one: it is
// escaped like text from the cluster, and the columns still align.
func TestSummaryTextContextNamesEscaped(t *testing.T) {
	s := Summary{Verdict: "met", Contexts: []ContextSummary{
		{Name: "prod\x1b[31m\n::error::x", Verdict: "met", Pods: 1, Reason: "ok"},
		{Name: "eu", Verdict: "met", Pods: 1, Reason: "ok"},
	}}
	var b bytes.Buffer
	if err := s.WriteText(&b); err != nil {
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
