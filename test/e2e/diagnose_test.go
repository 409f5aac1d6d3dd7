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
