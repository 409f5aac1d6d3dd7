package output

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
)

func TestTableLinesHaveNoTrailingSpaces(t *testing.T) {
	for _, args := range [][]string{nil, {"-o", "wide"}, {"--no-headers"}, {"-L", "app"}} {
		out := render(t, args, false, false)
		for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if strings.HasSuffix(line, " ") {
				t.Errorf("%v: line %d ends in spaces: %q", args, i, line)
			}
		}
	}
}

// A template that fails for one pod prints nothing for it, not even the
// part before the failing key or kubectl's debugging dump, and the error
// is one short line; the next pod prints normally.
func TestFailingTemplatePrintsNothing(t *testing.T) {
	for _, args := range [][]string{
		{"-o", `go-template={{.metadata.name}}={{.metadata.labels.missing}}{{"\n"}}`, "--allow-missing-template-keys=false"},
		{"-o", `jsonpath={.metadata.name}={.metadata.labels.missing}{"\n"}`, "--allow-missing-template-keys=false"},
	} {
		pf := get.NewGetPrintFlags()
		if err := newFlagCommand(pf).ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		w, err := New(Options{PrintFlags: pf, Out: &out, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		bad := message.Message{Type: message.Sync, Key: shopKey("web-1"), Row: row("web-1", "1/1", "Running", "0", "10.0.0.1", "1")}
		err = w.Write(bad)
		if err == nil {
			t.Fatalf("%v: no error for a pod without the label", args)
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || strings.Contains(msg, "object given") || !strings.Contains(msg, "missing") {
			t.Errorf("%v: want a short one-line error naming the key, got %q", args, msg)
		}
		good := message.Message{Type: message.Add, Key: shopKey("web-2"), Row: row("web-2", "1/1", "Running", "0", "10.0.0.2", "2")}
		good.Row.Meta().Labels["missing"] = "here"
		if err := w.Write(good); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != "web-2=here\n" {
			t.Errorf("%v: stdout %q, want only the good pod's line", args, got)
		}
	}
}

// Custom columns see the pod as kubectl get does: an unset field is
// <none> and a time prints as in JSON.
func TestCustomColumnsMatchKubectl(t *testing.T) {
	r := row("web-1", "0/1", "Pending", "0", "", "1")
	r.Pod().Spec.NodeName = ""
	pf := get.NewGetPrintFlags()
	if err := newFlagCommand(pf).ParseFlags([]string{"-o", "custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,CREATED:.metadata.creationTimestamp"}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w, err := New(Options{PrintFlags: pf, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(message.Message{Type: message.Sync, Key: shopKey("web-1"), Row: r}); err != nil {
		t.Fatal(err)
	}
	want := "NAME    NODE     CREATED\nweb-1   <none>   2026-12-02T11:58:30Z\n"
	if out.String() != want {
		t.Errorf("got\n%q\nwant\n%q", out.String(), want)
	}
}
