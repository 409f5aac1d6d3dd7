package output

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubectl/pkg/cmd/get"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kubectl-podsync/kubectl-podsync/internal/ghactions"
	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/diagnosis"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// evil is text a pod's author writes, in both of the runner's syntaxes.
const evil = "##[add-mask]s3cret ##[stop-commands]x\n  ::error::from the cluster\n##[warning]last"

func hostileRow(rv string) *wire.PodRow {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-1", Namespace: "shop", ResourceVersion: rv,
			CreationTimestamp: metav1.NewTime(now.Add(-90 * time.Second)),
			Annotations:       map[string]string{"note": evil, "##[error]key": "v"},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Message: evil},
	}
	r := wire.RowOf(p)
	r.Columns = columns
	r.Cells = []interface{}{"web-1", "0/1", "##[error]Reason" + rv, "0", "x", "<none>", "<none>", "<none>", "<none>"}
	return r
}

func hostileStream() []message.Message {
	d := &diagnosis.Diagnosis{
		Kind: diagnosis.Kind, Metadata: diagnosis.Meta{Name: "web-1", Namespace: "shop", UID: "uid-1"},
		Containers: []diagnosis.Container{{Name: "app", Reason: "Error", Logs: &check.LogTail{Lines: strings.Split(evil, "\n")}}},
		Events:     []check.EventExplanation{{Type: "Warning", Reason: "##[error]R", Message: evil, Count: 2}},
	}
	return []message.Message{
		{Type: message.Sync, Key: shopKey("web-1"), Row: hostileRow("1")},
		{Type: message.Update, Key: shopKey("web-1"), Row: hostileRow("2")},
		{Type: message.Diagnosis, Key: shopKey("web-1"), Row: hostileRow("2"), Diagnosis: d},
		{Type: message.Warning, Key: shopKey("web-1"), Event: shopEvent("web-1.1", "Warning", "##[error]x", evil, 1)},
	}
}

func renderHostile(t *testing.T, args []string, token string) string {
	t.Helper()
	pf := get.NewGetPrintFlags()
	if err := newFlagCommand(pf).ParseFlags(args); err != nil {
		t.Fatalf("flags %v: %v", args, err)
	}
	var out bytes.Buffer
	w, err := New(Options{PrintFlags: pf, Events: true, StopCommands: token, Out: &out, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range hostileStream() {
		if err := w.Write(m); err != nil {
			t.Fatalf("Write %s: %v", m.Type, err)
		}
	}
	if err := w.End(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// The test's text must be commands when printed as it is, or the checks
// below could not fail.
func TestHostileTextRunsCommandsUnprotected(t *testing.T) {
	if len(ghactions.Strict(renderHostile(t, []string{"-o", "yaml"}, ""))) == 0 {
		t.Fatal("the hostile stream runs no command even without protection")
	}
}

// Tables, names, json and yaml hold no line the runner reads as a command,
// whatever the stop-commands state: their text itself is safe.
func TestGitHubOutputRunsNoCommand(t *testing.T) {
	for _, format := range []string{"", "wide", "name", "json", "yaml", "kyaml"} {
		out := renderHostile(t, []string{"-o", format}, "TOKEN")
		for _, c := range ghactions.Strict(out) {
			t.Errorf("-o %q: the runner runs %q from line %q", format, c.Name, c.Line)
		}
		if format != "" && format != "wide" && strings.Contains(out, "::stop-commands::") {
			t.Errorf("-o %s: a guard line in the output:\n%s", format, out)
		}
	}
}

// json and yaml decode to the same objects as without GitHub Actions.
func TestGitHubOutputDecodesEqual(t *testing.T) {
	for _, format := range []string{"json", "yaml", "kyaml"} {
		plain := decodeAll(t, renderHostile(t, []string{"-o", format}, ""))
		safe := decodeAll(t, renderHostile(t, []string{"-o", format}, "TOKEN"))
		if len(plain) != 4 || !reflect.DeepEqual(plain, safe) {
			t.Errorf("-o %s: %d documents under GitHub Actions differ from %d without:\n%v\n%v", format, len(safe), len(plain), safe, plain)
		}
	}
}

// decodeAll decodes JSON lines or YAML documents.
func decodeAll(t *testing.T, out string) []any {
	t.Helper()
	var docs []any
	sep := "\n"
	if !strings.HasPrefix(out, "{\"") {
		sep = "---\n"
	}
	for _, doc := range strings.Split(out, sep) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var v any
		if err := sigsyaml.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatalf("not parseable: %v\n%s", err, doc)
		}
		if err := json.Unmarshal(mustJSON(t, v), &v); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, v)
	}
	return docs
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Templates print the user's text exactly, between stop-commands lines
// that are always whole lines, also when the template ends mid-line; the
// pause is over when the output ends.
func TestGitHubTemplatesGuardedOnWholeLines(t *testing.T) {
	for _, tmpl := range []string{
		`jsonpath={.metadata.annotations.note}{"\n"}`,
		`jsonpath={.metadata.annotations.note}{.message}`,
		`go-template={{.metadata.name}} {{.message}}`,
		`custom-columns=NOTE:.metadata.annotations.note`,
	} {
		out := renderHostile(t, []string{"-o", tmpl}, "TOKEN")
		ran := ghactions.Replay(out)
		for _, c := range ran {
			if c.Name != "stop-commands" && c.Name != "TOKEN" {
				t.Errorf("-o %s: the runner runs %q from line %q", tmpl, c.Name, c.Line)
			}
		}
		if len(ran) == 0 || ran[len(ran)-1].Name != "TOKEN" {
			t.Errorf("-o %s: commands are still stopped when the output ends:\n%s", tmpl, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if i := strings.Index(line, "::TOKEN::"); i > 0 || strings.Index(line, "::stop-commands::") > 0 {
				t.Errorf("-o %s: a guard mid-line: %q", tmpl, line)
			}
		}
	}
}

// Control characters from the cluster are shown escaped in the server's
// cells and in CHANGES; plain cells stay as kubectl prints them.
func TestTableEscapesControlCharacters(t *testing.T) {
	pf := get.NewGetPrintFlags()
	var out bytes.Buffer
	w, err := New(Options{PrintFlags: pf, Out: &out, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	first := row("web-1", "0/1", "Pending", "0", "<none>", "1")
	second := row("web-1", "0/1", "Pending", "0", "<none>", "2")
	second.Cells[2] = "Bell\x07Back\x08C1\u0085Csi\u009bDel\x7fRtl\u202eIso\u2066"
	for _, m := range []message.Message{
		{Type: message.Sync, Key: shopKey("web-1"), Row: first},
		{Type: message.Update, Key: shopKey("web-1"), Row: second},
	} {
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, r := range got {
		if text.ControlChar(r) {
			t.Errorf("raw %U in the table:\n%q", r, got)
		}
	}
	want := `Bell^GBack^HC1\u0085Csi\u009bDel^?Rtl\u202eIso\u2066`
	if strings.Count(got, want) != 2 {
		t.Errorf("want %s in STATUS and in CHANGES:\n%s", want, got)
	}
}
