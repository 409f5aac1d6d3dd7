package output

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// columns are those a v1.37 API server sends for pods.
var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name"},
	{Name: "Ready", Type: "string"},
	{Name: "Status", Type: "string"},
	{Name: "Restarts", Type: "string"},
	{Name: "Age", Type: "string"},
	{Name: "IP", Type: "string", Priority: 1},
	{Name: "Node", Type: "string", Priority: 1},
	{Name: "Nominated Node", Type: "string", Priority: 1},
	{Name: "Readiness Gates", Type: "string", Priority: 1},
}

func shopKey(name string) cache.ObjectName { return cache.ObjectName{Namespace: "shop", Name: name} }

func row(name, ready, status, restarts, ip string, rv string) *wire.PodRow {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "shop", ResourceVersion: rv,
			CreationTimestamp: metav1.NewTime(now.Add(-90 * time.Second)),
			Labels:            map[string]string{"app": "web", "tier": "front"},
		},
		Spec:   corev1.PodSpec{NodeName: "kwok-node-0", Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPhase(status), PodIP: ip},
	}
	cells := []interface{}{name, ready, status, restarts, "ignored", ip, "kwok-node-0", "<none>", "<none>"}
	r := wire.RowOf(p)
	r.Cells, r.Columns = cells, columns
	return r
}

// stream is a short life of two pods: listed, changed, one deleted, one added.
func stream() []message.Message {
	return []message.Message{
		{Type: message.Sync, Key: shopKey("web-1"), Row: row("web-1", "0/1", "Pending", "0", "<none>", "1")},
		{Type: message.Sync, Key: shopKey("web-2"), Row: row("web-2", "1/1", "Running", "0", "10.0.0.2", "2")},
		{Type: message.Update, Key: shopKey("web-1"), Row: row("web-1", "1/1", "Running", "0", "10.0.0.1", "3")},
		{Type: message.Gone, Key: shopKey("web-2"), Row: row("web-2", "1/1", "Running", "0", "10.0.0.2", "2")},
		{Type: message.Add, Key: shopKey("web-long-name-3"), Row: row("web-long-name-3", "0/1", "ContainerCreating", "0", "<none>", "4")},
	}
}

func render(t *testing.T, args []string, allNamespaces, watchOnly bool) string {
	t.Helper()
	pf := get.NewGetPrintFlags()
	cmd := newFlagCommand(pf)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatalf("flags %v: %v", args, err)
	}
	var out bytes.Buffer
	w, err := New(Options{PrintFlags: pf, AllNamespaces: allNamespaces, WatchOnly: watchOnly, Out: &out, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatalf("New(%v): %v", args, err)
	}
	for _, m := range stream() {
		if err := w.Write(m); err != nil {
			t.Fatalf("Write %s %s: %v", m.Type, m.Key, err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestFormatsGolden(t *testing.T) {
	cases := []struct {
		name      string
		args      []string
		all, only bool
	}{
		{"table", nil, false, false},
		{"table-all-namespaces", nil, true, false},
		{"wide", []string{"-o", "wide"}, false, false},
		{"no-headers", []string{"--no-headers"}, false, false},
		{"show-labels", []string{"--show-labels"}, false, false},
		{"label-columns", []string{"-L", "app,tier"}, false, false},
		{"watch-only", nil, false, true},
		{"json", []string{"-o", "json"}, false, false},
		{"yaml", []string{"-o", "yaml"}, false, false},
		{"name", []string{"-o", "name"}, false, false},
		{"jsonpath", []string{"-o", `jsonpath={.metadata.name} {.status.phase}{"\n"}`}, false, false},
		{"go-template", []string{"-o", `go-template={{.metadata.name}}/{{.status.podIP}}{{"\n"}}`}, false, false},
		{"custom-columns", []string{"-o", "custom-columns=NAME:.metadata.name,PHASE:.status.phase,NODE:.spec.nodeName"}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := render(t, tc.args, tc.all, tc.only)
			golden(t, tc.name, got)
		})
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./pkg/output -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestTemplateErrorsAreReportedByNew(t *testing.T) {
	for _, args := range [][]string{
		{"-o", "jsonpath={.metadata.name"},
		{"-o", "go-template={{.metadata.name"},
		{"-o", "custom-columns=NAME"},
		{"-o", "yml"},
	} {
		pf := get.NewGetPrintFlags()
		if err := newFlagCommand(pf).ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		if _, err := New(Options{PrintFlags: pf, Out: &bytes.Buffer{}}); err == nil {
			t.Errorf("New(%v) accepted a bad output", args)
		}
	}
}

func TestColorWrapsOnlyEventNames(t *testing.T) {
	got := string(colorize([]byte("EVENT    NAME\nSYNC     a\nGONE     b\n"), eventColors()))
	want := "EVENT    NAME\n\x1b[34mSYNC\x1b[0m     a\n\x1b[31mGONE\x1b[0m     b\n"
	if got != want {
		t.Errorf("colorize: got %q, want %q", got, want)
	}
	t.Setenv("NO_COLOR", "1")
	if ColorWanted("auto", os.Stdout) {
		t.Error("auto colour with NO_COLOR set")
	}
	if !ColorWanted("always", &bytes.Buffer{}) || ColorWanted("never", os.Stdout) {
		t.Error("always/never not honoured")
	}
}

// writes records each write to the output.
type writes struct{ calls []string }

func (w *writes) Write(p []byte) (int, error) {
	w.calls = append(w.calls, string(p))
	return len(p), nil
}

// A buffered JSON page is written in batches of whole lines, each at least
// batchBytes but the last, and the bytes are those written one by one; a
// table stays held until Flush whatever its size.
func TestBufferedPagesWriteInBatches(t *testing.T) {
	for _, format := range []string{"json", "wide"} {
		print := func(buffered bool) *writes {
			pf := get.NewGetPrintFlags()
			if err := newFlagCommand(pf).ParseFlags([]string{"-o", format}); err != nil {
				t.Fatal(err)
			}
			out := &writes{}
			w, err := New(Options{PrintFlags: pf, Out: out, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			w.SetBuffered(buffered)
			for i := range 300 {
				name := fmt.Sprintf("web-%03d", i)
				if err := w.Write(message.Message{Type: message.Sync, Key: shopKey(name), Row: row(name, "1/1", "Running", "0", "10.0.0.1", "1")}); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			return out
		}
		one, batched := print(false), print(true)
		if strings.Join(one.calls, "") != strings.Join(batched.calls, "") {
			t.Fatalf("-o %s: buffered output differs", format)
		}
		if format == "wide" {
			if len(batched.calls) != 1 {
				t.Errorf("a buffered table was written in %d parts, want 1", len(batched.calls))
			}
			continue
		}
		if len(one.calls) != 300 || len(batched.calls) < 2 || len(batched.calls) > 300/10 {
			t.Fatalf("-o json: %d writes one by one, %d batched", len(one.calls), len(batched.calls))
		}
		for i, c := range batched.calls {
			if !strings.HasSuffix(c, "\n") || (i < len(batched.calls)-1 && len(c) < batchBytes) {
				t.Errorf("batch %d of %d: %d bytes, ends in a newline: %v", i, len(batched.calls), len(c), strings.HasSuffix(c, "\n"))
			}
		}
	}
}

// Every message type has its word for -o name and its colour.
func TestEveryKindHasAVerbAndAColor(t *testing.T) {
	var got []string
	for _, k := range message.Types() {
		got = append(got, k.String()+"/"+verb(k))
		if eventColors()[k.String()] == "" {
			t.Errorf("%s has no colour", k)
		}
	}
	if want := "[SYNC/synced ADD/added UPDATE/updated GONE/gone DIAGNOSIS/diagnosed WARNING/warning NORMAL/normal]"; fmt.Sprint(got) != want {
		t.Errorf("verbs %v, want %s", got, want)
	}
}
