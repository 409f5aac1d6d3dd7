package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-podsync/kubectl-podsync/internal/ghactions"
	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// commandText is cluster text in both of the runner's syntaxes, on
// several lines, with a bidi override and a bell.
const commandText = "##[add-mask]s3cret and ##[warning]from the cluster\n  ::error::a second line\n##[stop-commands]x\u202e\x07"

// commandLog is a container log that tries to stop podsync's own
// annotations and to run commands of its own.
var commandLog = []string{
	"starting",
	"##[stop-commands]x",
	"log ##[error]anywhere in a line",
	"::add-mask::from the log",
	"Error: giving up",
}

// commandReason is a waiting reason from a runtime that writes both of
// the runner's syntaxes.
const commandReason = "##[add-mask]Reason::error::x\u202e"

// commandPods makes a crash-looping pod "loop" that carries commandText in
// an annotation and a Warning Event, and commandLog as its log; and a pod
// "stuck" whose container waits with commandReason, and commandText as
// its waiting message and termination message.
func commandPods(t *testing.T, ns string) {
	t.Helper()
	env.Apply(t, ns, harness.PodYAML("stuck", map[string]string{
		localcluster.StateAnnotation: localcluster.StateWaiting, "note": commandText,
		localcluster.ReasonAnnotation: commandReason, localcluster.MessageAnnotation: commandText,
	}))
	env.Apply(t, ns, harness.PodYAML("loop", map[string]string{
		localcluster.StateAnnotation: localcluster.StateCrashLoop, "note": commandText,
	}))
	harness.Eventually(t, podLimit, harness.Text("the crash log of loop"), func() bool {
		out, err := env.KubectlErr("logs", "-n", ns, "loop")
		return err == nil && strings.Contains(out, localcluster.CrashLoopLastLine)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logs := map[string]localcluster.ContainerLog{"app": {Current: commandLog, Previous: commandLog}}
	if err := env.Cluster.SetLogs(ctx, ns, "loop", logs); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, podLimit, harness.Text("the log of loop"), func() bool {
		out, err := env.KubectlErr("logs", "--previous", "-n", ns, "loop")
		return err == nil && strings.Contains(out, "##[stop-commands]x")
	})
	harness.Eventually(t, podLimit, harness.Text("stuck waiting with the planted reason"), func() bool {
		out, err := env.KubectlErr("get", "pod", "-n", ns, "stuck", "-o", "jsonpath={.status.containerStatuses[0].state.waiting.reason}")
		return err == nil && out == commandReason
	})
	uid := env.KubectlOut(t, "get", "pod", "-n", ns, "loop", "-o", "jsonpath={.metadata.uid}")
	now := time.Now().UTC().Format(time.RFC3339)
	env.Apply(t, ns, fmt.Sprintf(`apiVersion: v1
kind: Event
metadata:
  name: loop.commands
involvedObject: {kind: Pod, name: loop, namespace: %s, uid: %s}
type: Warning
reason: "##[error]Reason"
message: %q
count: 3
firstTimestamp: %s
lastTimestamp: %s
`, ns, uid, commandText, now, now))
}

// ownCommand: a command podsync itself writes under GitHub Actions.
func ownCommand(c ghactions.Command, ns string) bool {
	switch strings.ToLower(c.Name) {
	case "stop-commands":
		return regexp.MustCompile(`^::stop-commands::[0-9a-f]{32}$`).MatchString(c.Line)
	case "error":
		return strings.HasPrefix(c.Line, "::error title=pod "+ns+"/loop%3A ") || strings.HasPrefix(c.Line, "::error title=pod "+ns+"/stuck%3A ")
	}
	return regexp.MustCompile(`^::[0-9a-f]{32}::$`).MatchString(c.Line)
}

// Under GitHub Actions, no line podsync writes in any format, with and
// without --diagnose and --events, runs a command from the cluster's text
// (annotations, Events, log lines, a waiting reason and message, a
// termination message), by the runner's own two parsers, on stdout or
// stderr (the JSON summary with -o json); json and yaml hold no guard line
// and decode to the cluster's text exactly.
func TestGitHubNoCommandFromTheCluster(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	commandPods(t, ns)
	gh := []string{"GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY=" + filepath.Join(t.TempDir(), "summary.md")}
	formats := []string{"", "wide", "json", "yaml", "name",
		"jsonpath={.metadata.annotations.note}",
		`go-template={{.metadata.name}} {{.metadata.annotations.note}}`,
		"custom-columns=NAME:.metadata.name,REASON:.status.containerStatuses[0].state.waiting.reason,NOTE:.metadata.annotations.note",
	}
	for _, diagnose := range []bool{true, false} {
		for _, format := range formats {
			args := []string{"-n", ns, "loop", "stuck", "--until", "ready", "--timeout", "2m"}
			if diagnose {
				args = append(args, "--diagnose", "--events")
			}
			if format != "" {
				args = append(args, "-o", format)
			}
			what := fmt.Sprintf("-o %q (--diagnose --events: %v)", format, diagnose)
			r := env.PodsyncEnv(t, runLimit, gh, args...)
			if r.Code != 4 {
				t.Fatalf("%s: exit %d, want 4\n%s", what, r.Code, r)
			}
			stdout := ghactions.Strict(r.Stdout)
			if strings.HasPrefix(format, "jsonpath") || strings.HasPrefix(format, "go-template") || strings.HasPrefix(format, "custom-columns") {
				// The template's text is the user's, exact, and guarded.
				stdout = ghactions.Replay(r.Stdout)
			}
			for _, c := range append(stdout, ghactions.Replay(r.Stderr)...) {
				if !ownCommand(c, ns) {
					t.Errorf("%s: the runner runs %q from %q", what, c.Name, c.Line)
				}
			}
			if n := len(ghactions.Replay(r.Stderr)); !strings.Contains(r.Stderr, "::error title=pod "+ns+"/loop") || n < 3 {
				t.Errorf("%s: podsync's own annotation did not run (%d commands ran)\n%s", what, n, r.Stderr)
			}
			if !strings.Contains(r.Stdout+r.Stderr, "add-mask]Reason") {
				t.Errorf("%s: the waiting reason is nowhere in the output\n%s", what, r)
			}
			sharedToken(t, what, r.Stdout, r.Stderr)
			switch format {
			case "json":
				checkDecoded(t, strings.Split(strings.TrimSpace(r.Stdout), "\n"), r.Stdout, diagnose)
			case "yaml":
				checkDecoded(t, strings.Split(r.Stdout, "---\n"), r.Stdout, diagnose)
			}
		}
	}
}

// sharedToken fails when stdout and stderr pause commands with the same
// token: the runner reads the two pipes apart, so a token seen on one
// could end the pause of the other.
func sharedToken(t *testing.T, what, stdout, stderr string) {
	t.Helper()
	re := regexp.MustCompile(`::stop-commands::([0-9a-f]+)`)
	tokens := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(stdout, -1) {
		tokens[m[1]] = true
	}
	for _, m := range re.FindAllStringSubmatch(stderr, -1) {
		if tokens[m[1]] {
			t.Errorf("%s: stdout and stderr share the stop-commands token %s", what, m[1])
			return
		}
	}
}

// checkDecoded: every document parses, no guard line is in them, and the
// annotation and the log lines decode to what the cluster holds.
func checkDecoded(t *testing.T, docs []string, out string, diagnosed bool) {
	t.Helper()
	if strings.Contains(out, "::stop-commands::") {
		t.Errorf("a guard line in parseable output:\n%s", out)
	}
	var note, sawDiagnosis bool
	for _, doc := range docs {
		var m struct {
			Type   string `json:"type"`
			Object struct {
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
				Containers []struct {
					Logs struct {
						Lines []string `json:"lines"`
					} `json:"logs"`
				} `json:"containers"`
			} `json:"object"`
		}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Errorf("not parseable: %v\n%s", err, doc)
			continue
		}
		if a, ok := m.Object.Metadata.Annotations["note"]; ok {
			note = true
			if a != commandText {
				t.Errorf("annotation decodes to %q, want %q", a, commandText)
			}
		}
		if m.Type == "DIAGNOSIS" && len(m.Object.Containers) > 0 {
			sawDiagnosis = true
			if got := strings.Join(m.Object.Containers[0].Logs.Lines, "\n"); got != strings.Join(commandLog, "\n") {
				t.Errorf("log lines decode to %q", got)
			}
		}
	}
	if !note || sawDiagnosis != diagnosed {
		t.Errorf("no pod with its annotation (%v), or a DIAGNOSIS %v with --diagnose %v, in\n%s", note, sawDiagnosis, diagnosed, out)
	}
}

// The job summary under GitHub Actions: at most 1 MiB however much the
// pods' logs hold, the verdict and the pod's line first, and no link from
// the cluster's text (log lines, an Event's message).
func TestGitHubJobSummaryBounded(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, harness.PodYAML("loop", crashLoop))
	harness.Eventually(t, podLimit, harness.Text("the crash log of loop"), func() bool {
		out, err := env.KubectlErr("logs", "-n", ns, "loop")
		return err == nil && strings.Contains(out, localcluster.CrashLoopLastLine)
	})
	var long []string
	for i := range 1000 {
		long = append(long, fmt.Sprintf("%d [click](https://evil.example/x) https://evil.example/y <b>bold</b> %s", i, strings.Repeat("x", 2000)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := env.Cluster.SetLogs(ctx, ns, "loop", map[string]localcluster.ContainerLog{"app": {Current: long, Previous: long}}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, podLimit, harness.Text("the long log of loop"), func() bool {
		out, err := env.KubectlErr("logs", "--previous", "-n", ns, "loop")
		return err == nil && strings.Contains(out, "999 [click]")
	})
	// An Event's message with a Markdown link and a bare URL.
	uid := env.KubectlOut(t, "get", "pod", "-n", ns, "loop", "-o", "jsonpath={.metadata.uid}")
	now := time.Now().UTC().Format(time.RFC3339)
	env.Apply(t, ns, fmt.Sprintf(`apiVersion: v1
kind: Event
metadata:
  name: loop.link
involvedObject: {kind: Pod, name: loop, namespace: %s, uid: %s}
type: Warning
reason: Linked
message: "see [event](https://evil.example/e) and https://evil.example/f"
count: 1
firstTimestamp: %s
lastTimestamp: %s
`, ns, uid, now, now))
	summary := filepath.Join(t.TempDir(), "summary.md")
	gh := []string{"GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY=" + summary}
	r := env.PodsyncEnv(t, runLimit, gh, "-n", ns, "loop", "--until", "ready", "--log-lines", "1000", "--timeout", "2m")
	if r.Code != 4 {
		t.Fatalf("exit %d, want 4\n%s", r.Code, r)
	}
	md, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	if len(md) > 1<<20 {
		t.Errorf("job summary of %d bytes, over 1 MiB", len(md))
	}
	text := string(md)
	for _, want := range []string{"### kubectl podsync: failed (exit 4)", "| " + ns + "/loop |", "cut: the job summary is at most 1 MiB", `Linked x1: see \[event\]\(https:\/\/evil.example/e\) and https:\/\/evil.example/f`} {
		if !strings.Contains(text, want) {
			t.Errorf("job summary lacks %q (%d bytes)", want, len(md))
		}
	}
	if regexp.MustCompile(`\]\(https?:|[^\\]\[click\]|[^/\x60]https://evil`).MatchString(outsideCode(text)) {
		t.Errorf("a link from the cluster's text can be clicked in the job summary")
	}
}

// outsideCode is md without its fenced code blocks, where nothing is a link.
func outsideCode(md string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			in = !in
			continue
		}
		if !in {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// -o json and -o yaml under GitHub Actions decode to the very objects of
// the same run without it (pods, DIAGNOSIS, Events), with --diagnose and
// --events, for pods that hold commands in every field the cluster lets
// anyone write: annotations, a waiting reason and message, a termination
// message, log lines and an Event.
func TestGitHubParseableOutputsDecodeEqual(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	// Both pods stay as they are: the two runs see the same objects.
	env.Apply(t, ns, harness.PodYAML("stuck", map[string]string{
		localcluster.StateAnnotation: localcluster.StateWaiting, "note": commandText,
		localcluster.ReasonAnnotation: commandReason, localcluster.MessageAnnotation: commandText,
	}))
	env.Apply(t, ns, `apiVersion: v1
kind: Pod
metadata:
  name: failed
  annotations: {`+localcluster.StateAnnotation+`: `+localcluster.StateError+`, note: `+fmt.Sprintf("%q", commandText)+`}
spec:
  restartPolicy: Never
  containers: [{name: app, image: registry.example/app:1}]
`)
	harness.Eventually(t, podLimit, harness.Text("failed to fail and stuck to wait"), func() bool {
		a, err1 := env.KubectlErr("get", "pod", "-n", ns, "failed", "-o", "jsonpath={.status.phase}")
		b, err2 := env.KubectlErr("get", "pod", "-n", ns, "stuck", "-o", "jsonpath={.status.containerStatuses[0].state.waiting.reason}")
		return err1 == nil && err2 == nil && a == "Failed" && b == commandReason
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := env.Cluster.SetLogs(ctx, ns, "failed", map[string]localcluster.ContainerLog{"app": {Current: commandLog, Previous: commandLog}}); err != nil {
		t.Fatal(err)
	}
	uid := env.KubectlOut(t, "get", "pod", "-n", ns, "failed", "-o", "jsonpath={.metadata.uid}")
	now := time.Now().UTC().Format(time.RFC3339)
	env.Apply(t, ns, fmt.Sprintf(`apiVersion: v1
kind: Event
metadata:
  name: failed.commands
involvedObject: {kind: Pod, name: failed, namespace: %s, uid: %s}
type: Warning
reason: "##[error]Reason"
message: %q
count: 3
firstTimestamp: %s
lastTimestamp: %s
`, ns, uid, commandText, now, now))

	gh := []string{"GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY=" + filepath.Join(t.TempDir(), "summary.md")}
	for _, format := range []string{"json", "yaml"} {
		args := []string{"-n", ns, "--once", "--diagnose", "--events", "-o", format}
		plain := env.Podsync(t, runLimit, args...)
		actions := env.PodsyncEnv(t, runLimit, gh, args...)
		if plain.Code != 0 || actions.Code != 0 {
			t.Fatalf("-o %s: exit %d without and %d under GitHub Actions, want 0\n%s\n%s", format, plain.Code, actions.Code, plain, actions)
		}
		if strings.Contains(actions.Stdout, "::stop-commands::") {
			t.Errorf("-o %s: a guard line in the output:\n%s", format, actions.Stdout)
		}
		for _, c := range ghactions.Strict(actions.Stdout) {
			t.Errorf("-o %s: the runner runs %q from %q", format, c.Name, c.Line)
		}
		want, got := decodeDocs(t, format, plain.Stdout), decodeDocs(t, format, actions.Stdout)
		if len(want) != 3 {
			t.Fatalf("-o %s: %d documents without GitHub Actions, want 2 pods and a DIAGNOSIS\n%s", format, len(want), plain.Stdout)
		}
		if !reflect.DeepEqual(want, got) {
			t.Errorf("-o %s: under GitHub Actions the output decodes to\n%v\nwithout it to\n%v", format, got, want)
		}
		if !strings.Contains(fmt.Sprint(got), "add-mask]Reason") || !strings.Contains(fmt.Sprint(got), "##[stop-commands]x") {
			t.Errorf("-o %s: the planted text is not in the decoded output: %v", format, got)
		}
	}
}

// decodeDocs decodes each JSON line or YAML document of out, without the
// ages of a diagnosis's Events, which tell the time of the run.
func decodeDocs(t *testing.T, format, out string) []any {
	t.Helper()
	docs := strings.Split(strings.TrimSpace(out), "\n")
	if format == "yaml" {
		docs = strings.Split(out, "---\n")
	}
	var all []any
	for _, doc := range docs {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var v any
		if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatalf("-o %s: not parseable: %v\n%s", format, err, doc)
		}
		if m, ok := v.(map[string]any); ok && m["type"] == "DIAGNOSIS" {
			if obj, ok := m["object"].(map[string]any); ok {
				if events, ok := obj["events"].([]any); ok {
					for _, e := range events {
						delete(e.(map[string]any), "age")
					}
				}
			}
		}
		all = append(all, v)
	}
	return all
}
