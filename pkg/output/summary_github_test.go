package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/ghactions"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// hostileSummary explains a crash-looping pod whose previous log and
// status message hold a terminal escape sequence and workflow commands.
func hostileSummary() check.Summary {
	pod := crashPod()
	pod.Status.ContainerStatuses[0].State.Waiting.Message = "back-off \x1b]0;owned\x07\x1b[2J restarting"
	x := check.ExplainAt(summaryNow, pod, mustConditions("ready"), []corev1.Event{summaryEvent("BackOff", 30*time.Second, 2)})
	x.Containers[1].Logs = &check.LogTail{Previous: true, Lines: []string{
		"starting",
		"\x1b[31mred\x1b[0m and a bell\x07",
		"::error::spoofed",
		"  ::add-mask::secret",
		"| a | table | <b>html</b> [link](http://x) ```",
	}}
	x.Missing = []string{"events: \x1b[2J forbidden"}
	return check.Summary{Verdict: "failed", ExitCode: 4, Duration: time.Second, Pods: 1, EventTypes: podTypes,
		Reason: "pod default/web-1: \x1b[2J", Unsatisfied: []check.PodExplanation{x}}
}

func TestWriteTextLogsEscaped(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSummaryText(&buf, hostileSummary()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"  Container app: waiting (CrashLoopBackOff: back-off ^[]0;owned^G^[[2J restarting), ready false, restarts 4; last terminated (Error), exit code 1\n" +
			"    Log, last 5 lines (previous instance):\n" +
			"      starting\n" +
			"      ^[[31mred^[[0m and a bell^G\n" +
			"      ::error::spoofed\n",
		"  Missing: events: ^[[2J forbidden\n",
		"Reason:   pod default/web-1: ^[[2J\n",
	} {
		wantSafe(t, "text", out, want)
	}
}

// wantSafe requires out to hold want and no raw escape or bell.
func wantSafe(t *testing.T, what, out, want string) {
	t.Helper()
	if !strings.Contains(out, want) {
		t.Errorf("%s lacks %q\n%s", what, want, out)
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("%s holds raw control characters:\n%q", what, out)
	}
}

func TestWriteTextLogStates(t *testing.T) {
	x := check.ExplainAt(summaryNow, crashPod(), nil, nil)
	x.Containers[0].Logs = &check.LogTail{Error: "pods \"web-1\" is forbidden: cannot get resource \"pods/log\""}
	x.Containers[1].Logs = &check.LogTail{Lines: []string{}, Previous: false}
	var buf bytes.Buffer
	if err := WriteSummaryText(&buf, check.Summary{Verdict: "failed", Unsatisfied: []check.PodExplanation{x}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"    Log: not available: pods \"web-1\" is forbidden: cannot get resource \"pods/log\"\n",
		"    Log: empty (current instance)\n",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q\n%s", want, buf.String())
		}
	}
}

// JSON keeps the text exactly: its encoder escapes control characters.
func TestWriteJSONLogsExact(t *testing.T) {
	s := hostileSummary()
	var buf bytes.Buffer
	if err := WriteSummaryJSON(&buf, s); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(buf.String(), "\x1b\x07") {
		t.Errorf("JSON holds raw control characters")
	}
	var back struct {
		Unsatisfied []check.PodExplanation `json:"unsatisfied"`
	}
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	got := back.Unsatisfied[0].Containers[1].Logs
	want := s.Unsatisfied[0].Containers[1].Logs
	if got == nil || !got.Previous || strings.Join(got.Lines, "\n") != strings.Join(want.Lines, "\n") {
		t.Errorf("logs came back as %+v, want %+v", got, want)
	}
	if !strings.Contains(buf.String(), `"logs":{"previous":true,"lines":["starting","\u001b[31mred\u001b[0m and a bell\u0007","::error::spoofed",`) {
		t.Errorf("JSON logs shape:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), `"missing":["events: \u001b[2J forbidden"]`) {
		t.Errorf("JSON lacks missing:\n%s", buf.String())
	}
}

func TestWriteAnnotations(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSummaryAnnotations(&buf, hostileSummary()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Count(out, "\n") != 1 {
		t.Fatalf("want one annotation line, got:\n%s", out)
	}
	want := "::error title=pod default/web-1%3A CrashLoopBackOff::container app: waiting (CrashLoopBackOff: back-off ^[]0;owned^G^[[2J restarting)" +
		"%0Astarting%0A^[[31mred^[[0m and a bell^G%0A::error::spoofed%0A  ::add-mask::secret%0A| a | table | <b>html</b> [link](http://x) ```\n"
	if out != want {
		t.Errorf("annotation:\n%q\nwant\n%q", out, want)
	}
}

func TestWriteMarkdown(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSummaryMarkdown(&buf, hostileSummary(), ghactions.MaxStepSummary); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"### kubectl podsync: failed (exit 4) after 1s\n",
		"| pod | phase | containers | unmet | events |\n|---|---|---|---|---|\n",
		"| default/web-1 |",
		"<details><summary>default/web-1, container app: last 5 log lines (previous instance)</summary>\n\n````text\nstarting\n^[[31mred^[[0m and a bell^G\n::error::spoofed\n",
		"| a | table | <b>html</b> [link](http://x) ```\n````\n\n</details>\n",
	} {
		wantSafe(t, "Markdown", out, want)
	}
}

func TestMdText(t *testing.T) {
	got := mdText("a | b <img src=x> [l](u) *x* `c` & \\ ops@example.com")
	want := `a \| b &lt;img src=x&gt; \[l\]\(u\) \*x\* \` + "`c\\`" + ` &amp; \\ ops\@example.com`
	if got != want {
		t.Errorf("mdText = %q, want %q", got, want)
	}
}

// However much the pods' logs hold, the job summary stays under GitHub's
// 1 MiB, with the verdict and every pod's row first and each tail's last
// lines kept; links from the cluster cannot be clicked.
func TestWriteMarkdownBounded(t *testing.T) {
	sum := check.Summary{Verdict: "failed", ExitCode: 4, Pods: 10}
	var lines []string
	for i := range 50 {
		lines = append(lines, fmt.Sprintf("line %d %s", i, strings.Repeat("x", 2040)))
	}
	for i := range 10 {
		sum.Unsatisfied = append(sum.Unsatisfied, check.PodExplanation{
			Namespace: "shop", Name: fmt.Sprintf("web-%d", i), Phase: "Running",
			Containers: []check.ContainerExplanation{{Name: "app", State: "waiting", Reason: "CrashLoopBackOff", Logs: &check.LogTail{Lines: lines}}},
			Events:     []check.EventExplanation{{Type: "Warning", Reason: "R", Message: "see [here](https://evil.example/a) or https://evil.example/b or www.evil.example <a href=x> or mail oncall@evil.example", Count: 1}},
		})
	}
	var buf bytes.Buffer
	if err := WriteSummaryMarkdown(&buf, sum, ghactions.MaxStepSummary); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	if len(md) > ghactions.MaxStepSummary {
		t.Errorf("%d bytes, over 1 MiB", len(md))
	}
	for i := range 10 {
		if !strings.Contains(md, fmt.Sprintf("| shop/web-%d | Running |", i)) {
			t.Errorf("no row for web-%d", i)
		}
	}
	if !strings.Contains(md, "line 49 ") || !strings.Contains(md, "cut: the job summary is at most 1 MiB") {
		t.Errorf("the last log line or the note is missing (%d bytes)", len(md))
	}
	for _, link := range []string{"](", "https://", "www.evil", "<a ", "oncall@"} {
		if strings.Contains(md, link) {
			t.Errorf("the job summary holds %q from the cluster", link)
		}
	}
}

// A target whose own rule failed gets an annotation of its own, even with
// no pod to blame, and the job summary lists every target's verdict.
func TestTargetsInAnnotationsAndMarkdown(t *testing.T) {
	sum := check.Summary{Verdict: "failed", ExitCode: 4, Targets: []check.TargetSummary{
		{APIVersion: "cert-manager.io/v1", Kind: "Certificate", Namespace: "shop", Name: "web-tls", Verdict: check.TargetFailed,
			Reason: "Issuing: the ACME order failed ::error::x", Rule: "kstatus"},
		{Kind: "Deployment", Namespace: "shop", Name: "web", Verdict: check.TargetMet, Reason: "rolled out 2/2"},
	}}
	var b bytes.Buffer
	if err := WriteSummaryAnnotations(&b, sum); err != nil {
		t.Fatal(err)
	}
	want := "::error title=certificate.cert-manager.io/web-tls%3A failed::Issuing: the ACME order failed ::error::x (kstatus)\n"
	if b.String() != want {
		t.Errorf("annotations:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	if err := WriteSummaryMarkdown(&b, sum, ghactions.MaxStepSummary); err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"| target | verdict | reason |",
		"| certificate.cert-manager.io/web-tls | failed | Issuing: the ACME order failed ::error::x \\(kstatus\\) |",
		"| deployment/web | met | rolled out 2/2 |"} {
		if !strings.Contains(b.String(), row) {
			t.Errorf("job summary has no %q:\n%s", row, b.String())
		}
	}
}
