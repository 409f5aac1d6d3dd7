package checks

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// summaryLogs is the log tail of a container in the JSON summary.
type summaryLogs struct {
	Previous bool     `json:"previous"`
	Lines    []string `json:"lines"`
	Error    string   `json:"error"`
}

// summaryWithLogs decodes what the JSON summary says of the first
// unsatisfied pod's containers' logs and its events.
type summaryWithLogs struct {
	Unsatisfied []struct {
		Name       string `json:"name"`
		Containers []struct {
			Name string       `json:"name"`
			Logs *summaryLogs `json:"logs"`
		} `json:"containers"`
		Events  []summaryEvent `json:"events"`
		Missing []string       `json:"missing"`
	} `json:"unsatisfied"`
}

// backOffWarned waits until a pod of the selector has crashed and the
// kubelet (kwok) has reported a BackOff Warning for it.
func backOffWarned(t *testing.T, ns, selector string) {
	t.Helper()
	waitPods(t, ns, selector, 1, "crash-looping", func(p *corev1.Pod) bool { return restarts(p) >= 1 })
	harness.Eventually(t, settle, harness.Text("a BackOff Warning in "+ns), func() bool {
		list, err := env.Clientset(t).CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=BackOff"})
		return err == nil && len(list.Items) > 0
	})
}

// A crash-looping pod fails the check, and the explanation shows why: the
// crashed container's last log lines, from its previous instance (as
// `kubectl logs --previous`), and its Warning events; the JSON summary
// carries the same.
func TestCrashLoopExplainedWithItsLog(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, deploymentYAML("crash", "registry.example/crash:1", 1, state(localcluster.StateCrashLoop)))
	backOffWarned(t, ns, "app=crash")
	want := localcluster.CrashLoopLog().Previous

	r := check(t, "-n", ns, "-l", "app=crash", "--until", "ready", "--timeout", "4m")
	wantVerdict(t, r, 4, "failed")
	wantTook(t, r, 30*time.Second)
	wantStderr(t, r, "    Log, last 4 lines (previous instance):\n      "+strings.Join(want, "\n      ")+"\n",
		"Events (warnings first, newest first):\n", "Warning  BackOff  x")
	if strings.Contains(r.Stderr, "Missing:") {
		t.Errorf("the explanation misses something\n%s", r)
	}

	r = check(t, "-n", ns, "-l", "app=crash", "--until", "ready", "--timeout", "4m", "-o", "json")
	wantVerdict(t, r, 4, "failed")
	var s summaryWithLogs
	decodeLastLine(t, r, &s)
	if len(s.Unsatisfied) == 0 || len(s.Unsatisfied[0].Containers) == 0 {
		t.Fatalf("JSON summary explains no container\n%s", r)
	}
	logs := s.Unsatisfied[0].Containers[0].Logs
	if logs == nil || !logs.Previous || strings.Join(logs.Lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("JSON logs = %+v, want the previous instance's %q", logs, want)
	}
	if ev := s.Unsatisfied[0].Events; len(ev) == 0 || ev[0].Type != "Warning" || ev[0].Reason != "BackOff" {
		t.Errorf("JSON events = %+v, want the BackOff Warning first", ev)
	}
}

// The same check with logs off (--log-lines 0): no log is read, the
// events still are, and the verdict comes as fast.
func TestCrashLoopWithoutLogs(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, deploymentYAML("quiet", "registry.example/crash:1", 1, state(localcluster.StateCrashLoop)))
	backOffWarned(t, ns, "app=quiet")
	r := check(t, "-n", ns, "-l", "app=quiet", "--until", "ready", "--timeout", "4m", "--log-lines", "0")
	wantVerdict(t, r, 4, "failed")
	wantTook(t, r, 30*time.Second)
	if strings.Contains(r.Stderr, "Log, last") || strings.Contains(r.Stderr, localcluster.CrashLoopLastLine) {
		t.Errorf("--log-lines 0 printed a log\n%s", r)
	}
	wantStderr(t, r, "Warning  BackOff  x")
}

// decodeLastLine decodes stderr's last line, the JSON summary, into v.
func decodeLastLine(t *testing.T, r harness.Result, v any) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), v); err != nil {
		t.Fatalf("stderr's last line is not the JSON summary: %v\n%s", err, r)
	}
}
