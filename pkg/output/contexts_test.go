package output

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
)

var twoContexts = []string{"prod-eu", "staging"}

// contextStream is the same pod shop/web-1 in two contexts, interleaved:
// each context's CHANGES compare with its own previous state only.
func contextStream() []message.Message {
	in := func(ctx string, m message.Message) message.Message {
		m.Context = ctx
		return m
	}
	return []message.Message{
		in("prod-eu", message.Message{Type: message.Sync, Key: shopKey("web-1"), Row: row("web-1", "0/1", "Pending", "0", "<none>", "1")}),
		in("staging", message.Message{Type: message.Sync, Key: shopKey("web-1"), Row: row("web-1", "1/1", "Running", "0", "10.0.0.9", "5")}),
		in("prod-eu", message.Message{Type: message.Update, Key: shopKey("web-1"), Row: row("web-1", "1/1", "Running", "0", "10.0.0.1", "2")}),
		in("staging", message.Message{Type: message.Update, Key: shopKey("web-1"), Row: row("web-1", "0/1", "Terminating", "0", "10.0.0.9", "6")}),
		in("staging", message.Message{Type: message.Gone, Key: shopKey("web-1"), Row: row("web-1", "0/1", "Terminating", "0", "10.0.0.9", "6")}),
		in("prod-eu", message.Message{Type: message.Add, Key: shopKey("web-2"), Row: row("web-2", "0/1", "ContainerCreating", "0", "<none>", "3")}),
	}
}

func renderContexts(t *testing.T, args []string, allNamespaces, color bool) string {
	t.Helper()
	pf := get.NewGetPrintFlags()
	if err := newFlagCommand(pf).ParseFlags(args); err != nil {
		t.Fatalf("flags %v: %v", args, err)
	}
	var out bytes.Buffer
	w, err := New(Options{PrintFlags: pf, AllNamespaces: allNamespaces, Color: color, Contexts: twoContexts,
		Out: &out, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatalf("New(%v): %v", args, err)
	}
	for _, m := range contextStream() {
		if err := w.Write(m); err != nil {
			t.Fatalf("Write %s %s: %v", m.Type, m.Key, err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestContextFormatsGolden(t *testing.T) {
	cases := []struct {
		name string
		args []string
		all  bool
	}{
		{"contexts-table", nil, false},
		{"contexts-table-all-namespaces", nil, true},
		{"contexts-wide-labels", []string{"-o", "wide", "-L", "app"}, true},
		{"contexts-json", []string{"-o", "json"}, false},
		{"contexts-yaml", []string{"-o", "yaml"}, false},
		{"contexts-name", []string{"-o", "name"}, false},
		{"contexts-kyaml", []string{"-o", "kyaml"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, tc.name, renderContexts(t, tc.args, tc.all, false))
		})
	}
}

// The CONTEXT column starts as wide as the longest context name, so rows
// of every context line up from the first.
func TestContextColumnAligned(t *testing.T) {
	lines := strings.Split(strings.TrimRight(renderContexts(t, nil, true, false), "\n"), "\n")
	col := strings.Index(lines[0], "NAMESPACE")
	for _, l := range lines[1:] {
		if l[col-1] != ' ' || l[col] == ' ' || !strings.HasPrefix(l[col:], "shop ") {
			t.Errorf("NAMESPACE not at column %d in %q", col, l)
		}
	}
}

// --color gives each context its own colour, which is no event's colour.
func TestContextColors(t *testing.T) {
	got := renderContexts(t, nil, false, true)
	eu, staging := contextPalette[0]+"prod-eu"+colorReset, contextPalette[1]+"staging"+colorReset
	if strings.Count(got, eu) != 3 || strings.Count(got, staging) != 3 {
		t.Errorf("want 3 coloured prod-eu and 3 coloured staging cells:\n%q", got)
	}
	if !strings.Contains(got, "\x1b[34mSYNC"+colorReset) || strings.Contains(got, "\x1b[0mCONTEXT") {
		t.Errorf("event colours lost, or the header coloured:\n%q", got)
	}
	events := eventColors()
	for _, c := range contextPalette {
		for _, e := range events {
			if c == e {
				t.Errorf("context colour %q is an event colour", c)
			}
		}
	}
	// Without a table there is no CONTEXT column to colour.
	if name := renderContexts(t, []string{"-o", "name"}, false, true); strings.Contains(name, "\x1b[") {
		t.Errorf("-o name coloured: %q", name)
	}
}

// A name that starts another context's name is not taken for it.
func TestColorContextsLongestName(t *testing.T) {
	colors := map[string]string{"prod": "<p>", "prod-eu": "<e>"}
	got := string(colorContexts([]byte("SYNC   prod-eu   a\nSYNC   prod      b\nEVENT  CONTEXT   NAME\n"), colors))
	want := "SYNC   <e>prod-eu" + colorReset + "   a\nSYNC   <p>prod" + colorReset + "      b\nEVENT  CONTEXT   NAME\n"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
