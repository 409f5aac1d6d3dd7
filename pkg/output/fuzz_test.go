package output

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/kubectl-podsync/kubectl-podsync/internal/ghactions"
	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/diagnosis"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// fuzzFormats are the -o values the fuzz target prints in; templates are
// guarded, the rest must be safe line by line.
var fuzzFormats = [][]string{nil, {"-o", "wide"}, {"-o", "json"}, {"-o", "yaml"}, {"-o", "name"}, {"-o", "jsonpath={.metadata.annotations.a}"}}

// FuzzGitHubOutput puts random text in every field podsync prints from the
// cluster (an annotation, the STATUS cell, an Event's reason and message,
// a container's name, reason, message and log lines) and replays what the
// GitHub Actions writer prints, on stdout and in the summary on stderr,
// through the runner's parsers: no command may come from that text.
func FuzzGitHubOutput(f *testing.F) {
	f.Add("##[error]a", "::add-mask::b", "x\n  ::error::c", "#\u200b#[stop-commands]d")
	f.Add("\r::error::e", "\u2003::warning::f", ":\u200b:error::g", "###[ERROR]h")
	f.Add("web\n::add-mask::x", "prod\r\n::error::y", "ops@example.com ##[group]z", "0/3 nodes\n##[endgroup]")
	// What a credential plugin may print on stderr.
	f.Add("::error::pwned", "##[add-mask]x", "\r\n::set-output name=a::b", "  \t::stop-commands::tok")
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		msgs := fuzzMessages(a, b, c, d)
		for _, args := range fuzzFormats {
			out := fuzzRender(t, args, msgs)
			cmds := ghactions.Strict(out)
			if len(args) > 0 && strings.HasPrefix(args[1], "jsonpath") {
				cmds = ghactions.Replay(out)
			}
			for _, cmd := range cmds {
				if cmd.Line != "::stop-commands::TOKEN" && cmd.Line != "::TOKEN::" {
					t.Fatalf("%v: the runner runs %q from %q", args, cmd.Name, cmd.Line)
				}
			}
		}
		fuzzSummary(t, a, b, c, d)
		fuzzPluginStderr(t, a, b, c, d)
	})
}

// fuzzPluginStderr writes the texts as a credential plugin's stderr
// would come, in pieces cut anywhere, through the guard of a run under
// GitHub Actions.
func fuzzPluginStderr(t *testing.T, a, b, c, d string) {
	var out strings.Builder
	g := &text.LineGuard{Out: &out, GitHub: true, What: "a credential plugin"}
	for _, piece := range []string{a, b + "\n", c, "\r" + d} {
		_, _ = g.Write([]byte(piece))
		g.Flush()
	}
	if cmds := ghactions.Strict(out.String()); len(cmds) > 0 {
		t.Fatalf("plugin stderr: the runner runs %q from %q", cmds[0].Name, cmds[0].Line)
	}
}

func fuzzMessages(a, b, c, d string) []message.Message {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", ResourceVersion: "1",
			Annotations: map[string]string{"a": a, b: c}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Message: d},
	}
	r := wire.RowOf(pod)
	r.Columns = columns
	r.Cells = []interface{}{"web-1", "0/1", b, "0", "x", "<none>", "<none>", "<none>", "<none>"}
	r2 := wire.RowOf(pod)
	r2.Columns = columns
	r2.Cells = []interface{}{"web-1", "0/1", c, "0", "x", "<none>", "<none>", "<none>", "<none>"}
	diag := &diagnosis.Diagnosis{
		Kind: diagnosis.Kind, Metadata: diagnosis.Meta{Name: "web-1", Namespace: "shop"},
		Containers: []diagnosis.Container{{Name: a, Reason: b, Logs: &check.LogTail{Lines: []string{a, b, c, d}}}},
		Events:     []check.EventExplanation{{Type: "Warning", Reason: c, Message: d, Count: 2}},
		Missing:    []string{a},
	}
	return []message.Message{
		{Type: message.Sync, Key: shopKey("web-1"), Row: r},
		{Type: message.Update, Key: shopKey("web-1"), Row: r2},
		{Type: message.Diagnosis, Key: shopKey("web-1"), Row: r2, Diagnosis: diag},
		{Type: message.Warning, Key: shopKey("web-1"), Event: shopEvent("web-1.1", "Warning", a, b+"\n"+d, 1)},
	}
}

func fuzzRender(t *testing.T, args []string, msgs []message.Message) string {
	pf := get.NewGetPrintFlags()
	if err := newFlagCommand(pf).ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w, err := New(Options{PrintFlags: pf, Events: true, StopCommands: "TOKEN", Out: &out, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		// A message the printer cannot print (text the YAML reader
		// refuses) prints nothing, as in a run.
		_ = w.Write(m)
	}
	if err := w.End(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// fuzzSummary: the summary on stderr as a run writes it under GitHub
// Actions, defused, guarded, then the ::error annotations.
func fuzzSummary(t *testing.T, a, b, c, d string) {
	sum := check.Summary{Verdict: "failed", ExitCode: 4, Reason: a, Unsatisfied: []check.PodExplanation{{
		Namespace: "shop", Name: "web-1", Phase: b, Reason: c, Message: d,
		Containers:    []check.ContainerExplanation{{Name: a, State: "waiting", Reason: b, Message: c, Logs: &check.LogTail{Lines: []string{a, b, c, d}}}},
		Events:        []check.EventExplanation{{Type: "Warning", Reason: c, Message: d, Count: 1}},
		Unschedulable: d,
	}},
		Targets:  []check.TargetSummary{{Kind: "Deployment", Namespace: "shop", Name: a, Verdict: check.TargetFailed, Reason: b, Rule: c}},
		Contexts: []check.ContextSummary{{Name: b, Verdict: "failed", Reason: "unavailable: " + d}, {Name: c, Verdict: "met"}},
	}
	sum.SchedulingReason()
	var out strings.Builder
	_ = WriteSummaryForGitHub(&out, sum, "TOKEN")
	for _, cmd := range ghactions.Strict(out.String()) {
		own := cmd.Line == "::stop-commands::TOKEN" || strings.HasPrefix(cmd.Line, "::error title=pod shop/web-1") ||
			strings.HasPrefix(cmd.Line, "::error title=deployment/") || strings.HasPrefix(cmd.Line, "::error title=context ")
		if !own {
			t.Fatalf("summary: the runner runs %q from %q", cmd.Name, cmd.Line)
		}
	}
}
