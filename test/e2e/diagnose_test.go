package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// crashLoop is the pod state whose log KeepCrashLogs provides.
var crashLoop = map[string]string{localcluster.StateAnnotation: localcluster.StateCrashLoop}

// --diagnose and --events in table, json and name: a pod that starts to
// crash-loop while the streams run gets its log under its row (table) or
// a DIAGNOSIS message, and its Events are WARNING and NORMAL messages.
func TestDiagnoseAndEventsInEveryFormat(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	streams := map[string]*harness.Stream{}
	for _, format := range []string{"table", "json", "name"} {
		args := []string{"-n", ns, "--diagnose", "--events", "-v=6"}
		if format != "table" {
			args = append(args, "-o", format)
		}
		s := env.Start(t, args...)
		s.WaitStderr(`"Response" verb="GET" url="[^"]*/pods\?[^"]*watch=true[^"]*" status="200 OK"`, lineLimit)
		s.WaitStderr(`"Response" verb="GET" url="[^"]*/events\?[^"]*watch=true[^"]*" status="200 OK"`, lineLimit)
		streams[format] = s
	}
	env.Apply(t, ns, harness.PodYAML("crashy", crashLoop))
	last := regexp.QuoteMeta(localcluster.CrashLoopLastLine)

	table := streams["table"]
	table.WaitLine(`^NORMAL\s+crashy\s+Scheduled: Successfully assigned `+ns+`/crashy to `, lineLimit)
	table.WaitLine(`^    crashy: container app \((current|previous) instance\), last 4 log lines:$`, lineLimit)
	table.WaitLine(`^      `+last+`$`, lineLimit)
	table.WaitLine(`^WARNING\s+crashy\s+BackOff( \(x\d+\))?: Back-off restarting failed container$`, lineLimit)

	js := streams["json"]
	js.WaitLine(`^\{"type":"DIAGNOSIS","object":\{"kind":"Diagnosis","metadata":\{"name":"crashy","namespace":"`+ns+`"`, lineLimit)
	js.WaitLine(`^\{"type":"WARNING","object":\{"kind":"Event","apiVersion":"v1",.*"reason":"BackOff"`, lineLimit)
	js.WaitLine(`^\{"type":"NORMAL","object":\{"kind":"Event","apiVersion":"v1",.*"reason":"Scheduled"`, lineLimit)

	name := streams["name"]
	name.WaitLine(`^pod/crashy diagnosed$`, lineLimit)
	name.WaitLine(`^event/crashy\.[0-9a-f]+ warning$`, lineLimit)
	name.WaitLine(`^event/crashy\.[0-9a-f]+ normal$`, lineLimit)

	for format, s := range streams {
		r := s.Stop(syscall.SIGINT)
		if !strings.Contains(r.Stderr, "DIAGNOSIS ") || !regexp.MustCompile(`WARNING [1-9]`).MatchString(r.Stderr) {
			t.Errorf("%s: the summary does not count DIAGNOSIS and WARNING\n%s", format, r.Stderr)
		}
	}
	for _, line := range js.Lines() {
		var m struct {
			Type   string `json:"type"`
			Object struct {
				Containers []struct {
					Logs struct {
						Lines []string `json:"lines"`
					} `json:"logs"`
				} `json:"containers"`
			} `json:"object"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if m.Type == "DIAGNOSIS" {
			lines := m.Object.Containers[0].Logs.Lines
			if len(lines) != 4 || lines[3] != localcluster.CrashLoopLastLine {
				t.Errorf("DIAGNOSIS log lines = %q", lines)
			}
		}
	}
}

// hostileLog is a previous instance's log that tries to act on the
// terminal and on GitHub Actions.
var hostileLog = []string{
	"starting",
	"\x1b]0;owned\x07\x1b[2J",
	"::error::spoofed",
	"   ::add-mask::secret",
	"Error: giving up",
}

// hostilePod makes a crash-looping pod whose previous log is hostileLog.
func hostilePod(t *testing.T, ns string) {
	t.Helper()
	env.Apply(t, ns, harness.PodYAML("loop", crashLoop))
	// The crash-log keeper gives the pod its log first; the test's log
	// replaces it once that is served.
	harness.Eventually(t, podLimit, harness.Text("the crash log of loop"), func() bool {
		out, err := env.KubectlErr("logs", "-n", ns, "loop")
		return err == nil && strings.Contains(out, localcluster.CrashLoopLastLine)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logs := map[string]localcluster.ContainerLog{"app": {Current: hostileLog, Previous: hostileLog}}
	if err := env.Cluster.SetLogs(ctx, ns, "loop", logs); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, podLimit, harness.Text("the hostile previous log of loop"), func() bool {
		out, err := env.KubectlErr("logs", "--previous", "-n", ns, "loop")
		return err == nil && strings.Contains(out, "::error::spoofed")
	})
}

// Neither a terminal escape sequence nor a workflow command in a previous
// log reaches the output unescaped: escaped in text, exact in JSON.
func TestHostileLogIsEscaped(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	hostilePod(t, ns)
	r := env.Podsync(t, runLimit, "-n", ns, "loop", "--until", "ready", "--diagnose", "--timeout", "2m")
	if r.Code != 4 {
		t.Fatalf("exit %d, want 4\n%s", r.Code, r)
	}
	for name, out := range map[string]string{"stdout": r.Stdout, "stderr": r.Stderr} {
		if strings.ContainsAny(out, "\x1b\x07") {
			t.Errorf("%s holds a raw escape or bell: %q", name, out)
		}
	}
	for _, want := range []string{"      ^[]0;owned^G^[[2J\n", "      ::error::spoofed\n"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("the explanation lacks the escaped line %q\n%s", want, r)
		}
	}
	if !strings.Contains(r.Stdout, "    ^[]0;owned^G^[[2J\n") && !strings.Contains(r.Stdout, "      ^[]0;owned^G^[[2J\n") {
		t.Errorf("the --diagnose lines lack the escaped log\n%s", r)
	}

	r = env.Podsync(t, runLimit, "-n", ns, "loop", "--until", "ready", "--diagnose", "--timeout", "2m", "-o", "json")
	if r.Code != 4 {
		t.Fatalf("json: exit %d, want 4\n%s", r.Code, r)
	}
	if !strings.Contains(r.Stdout, `"\u001b]0;owned\u0007\u001b[2J"`) || !strings.Contains(r.Stderr, `"\u001b]0;owned\u0007\u001b[2J"`) {
		t.Errorf("the JSON does not keep the log line exactly\n%s", r)
	}
}

// Under GitHub Actions: the log lines are between stop-commands lines,
// one ::error annotation names the pod, and the job summary gets the
// summary as Markdown; outside GitHub Actions none of this.
func TestGitHubActions(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	hostilePod(t, ns)
	summary := filepath.Join(t.TempDir(), "step-summary.md")
	if err := os.WriteFile(summary, []byte("earlier step\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gh := []string{"GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY=" + summary}
	r := env.PodsyncEnv(t, runLimit, gh, "-n", ns, "loop", "--until", "ready", "--diagnose", "--timeout", "2m")
	if r.Code != 4 {
		t.Fatalf("exit %d, want 4\n%s", r.Code, r)
	}
	for name, out := range map[string]string{"stdout": r.Stdout, "stderr": r.Stderr} {
		for _, bad := range workflowCommands(out) {
			if !strings.HasPrefix(bad, "::error title=pod "+ns+"/loop%3A CrashLoopBackOff::") {
				t.Errorf("%s: a workflow command the runner would run: %q\n%s", name, bad, out)
			}
		}
	}
	annotations := regexp.MustCompile(`(?m)^::error title=.*$`).FindAllString(r.Stderr, -1)
	if len(annotations) != 1 || !strings.Contains(annotations[0], "%0A::error::spoofed%0A") {
		t.Errorf("annotations %q, want one with the log as its escaped body", annotations)
	}
	md, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"earlier step\n### kubectl podsync: failed (exit 4) after ",
		// Parentheses are escaped: cluster text never makes a link.
		"| " + ns + "/loop | Running | app: waiting \\(CrashLoopBackOff\\)",
		"```text\nstarting\n^[]0;owned^G^[[2J\n::error::spoofed\n",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("job summary lacks %q\n%s", want, md)
		}
	}

	plain := env.PodsyncEnv(t, runLimit, []string{"GITHUB_STEP_SUMMARY=" + summary}, "-n", ns, "loop", "--until", "ready", "--timeout", "2m")
	if strings.Contains(plain.Stdout+plain.Stderr, "::stop-commands::") || strings.Contains(plain.Stderr, "::error title=") {
		t.Errorf("GitHub Actions output outside GitHub Actions\n%s", plain)
	}
	if after, _ := os.ReadFile(summary); len(after) != len(md) {
		t.Error("the job summary was written outside GitHub Actions")
	}
}

// workflowCommands are the lines of out the Actions runner would run:
// those that start with "::" after leading spaces, outside a
// ::stop-commands::TOKEN ... ::TOKEN:: pause.
func workflowCommands(out string) []string {
	var run []string
	stopped := ""
	for _, line := range strings.Split(out, "\n") {
		cmd := strings.TrimLeft(line, " \t")
		switch {
		case stopped != "":
			if cmd == "::"+stopped+"::" {
				stopped = ""
			}
		case strings.HasPrefix(cmd, "::stop-commands::"):
			stopped = strings.TrimPrefix(cmd, "::stop-commands::")
		case strings.HasPrefix(cmd, "::"):
			run = append(run, cmd)
		}
	}
	return run
}

// A log tail keeps its last lines: one very long line before the error
// line is cut (and the cut is said), and the error line is still there,
// in the --diagnose lines, the check's explanation and the JSON DIAGNOSIS.
func TestLogTailKeepsLastLines(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, harness.PodYAML("long", crashLoop))
	harness.Eventually(t, podLimit, harness.Text("the crash log of long"), func() bool {
		out, err := env.KubectlErr("logs", "-n", ns, "long")
		return err == nil && strings.Contains(out, localcluster.CrashLoopLastLine)
	})
	const cause = "Error: the real cause"
	logs := []string{"starting", strings.Repeat("x", 40<<10), cause}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := env.Cluster.SetLogs(ctx, ns, "long", map[string]localcluster.ContainerLog{"app": {Current: logs, Previous: logs}}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, podLimit, harness.Text("the long log of long"), func() bool {
		out, err := env.KubectlErr("logs", "--previous", "-n", ns, "long")
		return err == nil && strings.Contains(out, cause)
	})

	r := env.Podsync(t, runLimit, "-n", ns, "long", "--until", "ready", "--diagnose", "--timeout", "2m")
	if r.Code != 4 {
		t.Fatalf("exit %d, want 4\n%s", r.Code, r)
	}
	for _, want := range []string{"      " + cause + "\n", "      (long lines cut at the byte limit, ending with …)\n"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("the explanation lacks %q\n%s", want, r.Stderr)
		}
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("the --diagnose lines lack %q\n%s", want, r.Stdout)
		}
	}

	r = env.Podsync(t, runLimit, "-n", ns, "long", "--until", "ready", "--diagnose", "--timeout", "2m", "-o", "json")
	if r.Code != 4 {
		t.Fatalf("json: exit %d, want 4\n%s", r.Code, r)
	}
	diagnosed := false
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		var m struct {
			Type   string `json:"type"`
			Object struct {
				Containers []struct {
					Logs struct {
						Lines     []string `json:"lines"`
						Truncated bool     `json:"truncated"`
					} `json:"logs"`
				} `json:"containers"`
			} `json:"object"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if m.Type != "DIAGNOSIS" || len(m.Object.Containers) == 0 {
			continue
		}
		diagnosed = true
		l := m.Object.Containers[0].Logs
		if len(l.Lines) != 3 || l.Lines[2] != cause || !l.Truncated || !strings.HasSuffix(l.Lines[1], "…") || len(l.Lines[1]) > 4<<10 {
			t.Errorf("DIAGNOSIS log: truncated %v, %d lines, last %q, long line of %d bytes", l.Truncated, len(l.Lines), l.Lines[len(l.Lines)-1:], len(l.Lines[min(1, len(l.Lines)-1)]))
		}
	}
	if !diagnosed {
		t.Errorf("no DIAGNOSIS in\n%s", r.Stdout)
	}
}

// terminalReason is a waiting reason that would act on a terminal: a
// bell, a backspace, a C1 CSI and a right-to-left override.
const terminalReason = "Bad\a\b\u009b31m\u202eRTL"

// terminalShown is terminalReason as podsync shows it on a terminal.
const terminalShown = `Bad^G^H\u009b31m\u202eRTL`

// rawControl finds a character that acts on a terminal in out: a C0
// control but tab and newline, DEL, a C1 control, or a bidi control.
func rawControl(out string) (rune, bool) {
	for _, r := range out {
		if r < 0x20 && r != '\t' && r != '\n' || r >= 0x7f && r < 0xa0 || r == 0x200e || r == 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 {
			return r, true
		}
	}
	return 0, false
}

// On a terminal (the default table), a waiting reason and message with
// control characters are shown escaped in the STATUS and CHANGES cells,
// in the summary's Pods: and container lines; and a target's name from a
// manifest in the Targets: line.
func TestHostileStatusIsEscaped(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	s := env.Start(t, "-n", ns, "-v=6")
	s.WaitStderr(`"Response" verb="GET" url="[^"]*/pods\?[^"]*watch=true[^"]*" status="200 OK"`, lineLimit)
	env.Apply(t, ns, harness.PodYAML("stuck", map[string]string{
		localcluster.StateAnnotation:  localcluster.StateWaiting,
		localcluster.ReasonAnnotation: terminalReason, localcluster.MessageAnnotation: "bell\a back\b csi\u009b rtl\u202e end",
	}))
	line := s.WaitLine(`^UPDATE\s+stuck\s.*RTL.*STATUS:`, lineLimit)
	shown := regexp.QuoteMeta(terminalShown)
	if !regexp.MustCompile(`^UPDATE\s+stuck\s+0/1\s+` + shown + `\s+1 .*STATUS:\S+→` + shown + `( |$)`).MatchString(line) {
		t.Errorf("STATUS and CHANGES are not shown escaped: %q", line)
	}
	stream := s.Stop(syscall.SIGINT)
	if r, ok := rawControl(stream.Stdout); ok {
		t.Errorf("the table holds a raw %U:\n%q", r, stream.Stdout)
	}

	manifest := writeFile(t, "deploy.yaml", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: "w\a\b\u009b\u202ex"
spec:
  selector: {matchLabels: {app: w}}
  template:
    metadata: {labels: {app: w}}
    spec: {containers: [{name: app, image: registry.example/app:1}]}
`)
	for _, args := range [][]string{{"stuck"}, {"-f", manifest}} {
		r := env.Podsync(t, runLimit, append([]string{"-n", ns, "--until", "ready", "--timeout", "3s"}, args...)...)
		if r.Code != 3 {
			t.Fatalf("%v: exit %d, want 3\n%s", args, r.Code, r)
		}
		for name, out := range map[string]string{"stdout": r.Stdout, "stderr": r.Stderr} {
			if c, ok := rawControl(out); ok {
				t.Errorf("%v: %s holds a raw %U:\n%q", args, name, c, out)
			}
		}
		want := []string{
			"Pods:     1 matched (" + terminalShown + " 1)\n",
			"  Container app: waiting (" + terminalShown + `: bell^G back^H csi\u009b rtl\u202e end), ready false, restarts 1; last terminated (Error: bell^G back^H csi\u009b rtl\u202e end), exit code 1`,
		}
		if args[0] == "-f" {
			want = []string{`Targets:  deployment/w^G^H\u009b\u202ex: not met: `}
		}
		for _, w := range want {
			if !strings.Contains(r.Stderr, w) {
				t.Errorf("%v: the summary lacks %q\n%s", args, w, r.Stderr)
			}
		}
	}
}
