package checks

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// A pod that runs but never becomes ready: exit 3 at --timeout, and the
// summary says why: phase, the unmet condition with its reason, each
// container's state and restarts, and the pod's recent Events.
func TestNeverReadyExplainsAtTimeout(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, harness.PodYAML("slow", state("never-ready")))
	waitPods(t, ns, "app=slow", 1, "running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })

	r := check(t, "-n", ns, "slow", "--until", "ready", "--timeout", "10s")
	wantVerdict(t, r, 3, "not met")
	if r.Took < 10*time.Second || r.Took > 10*time.Second+time.Minute {
		t.Errorf("verdict after %s, want at --timeout 10s", r.Took)
	}
	wantLines(t, r.Stdout, `^SYNC\s+slow\s+0/1\s+Running\s`, 1)
	wantStderr(t, r,
		"Reason:   1 of 1 matching pods do not satisfy ready\n",
		"Pods:     1 matched (Running 1)\n",
		"Events:   SYNC 1, ADD 0, UPDATE 0, GONE 0\n",
		"Pod "+ns+"/slow is not satisfied:\n",
		"  Phase:  Running\n",
		"  Unmet:  ready: want Ready=True, got Ready=False (ContainersNotReady: containers with unready status: [app])\n",
		"  Container app: running, ready false, restarts 0\n",
		"  Events (warnings first, newest first):\n",
		"  Warning  Unhealthy  x1  Readiness probe failed: HTTP probe failed with statuscode: 503\n")
}

// With -o json, the summary is also one JSON object on stderr's last line,
// after the text for people; stdout holds only the watch events.
func TestJSONSummary(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, harness.PodYAML("good", nil))
	env.Apply(t, ns, harness.PodYAML("bad", state("never-ready")))
	env.Apply(t, ns, harness.PodYAML("crash", state("crashloop")))
	waitPods(t, ns, "app=good", 1, "ready", harness.IsReady)
	waitPods(t, ns, "app=bad", 1, "running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })

	t.Run("met", func(t *testing.T) {
		r := check(t, "-n", ns, "good", "--until", "ready", "--timeout", "2m", "-o", "json")
		wantVerdict(t, r, 0, "met")
		s := lastLineJSON(t, r)
		if s.Verdict != "met" || s.ExitCode != 0 || s.Pods != 1 || s.Statuses["Running"] != 1 ||
			s.Events["SYNC"] != 1 || s.Unsatisfied == nil || len(s.Unsatisfied) != 0 {
			t.Errorf("JSON summary = %+v\n%s", s, r)
		}
		wantStdoutEvents(t, r, map[string]int{"SYNC": 1})
	})
	t.Run("not met", func(t *testing.T) {
		r := check(t, "-n", ns, "bad", "--until", "ready", "--timeout", "5s", "-o", "json")
		wantVerdict(t, r, 3, "not met")
		s := lastLineJSON(t, r)
		if s.Verdict != "not met" || s.ExitCode != 3 || s.DurationSeconds < 5 || s.Pods != 1 || len(s.Unsatisfied) != 1 {
			t.Fatalf("JSON summary = %+v\n%s", s, r)
		}
		p := s.Unsatisfied[0]
		if p.Namespace != ns || p.Name != "bad" || p.Phase != "Running" || len(p.UnmetConditions) != 1 ||
			p.UnmetConditions[0].Condition != "ready" || p.UnmetConditions[0].Got != "Ready=False" ||
			p.UnmetConditions[0].Reason != "ContainersNotReady" {
			t.Errorf("explained pod = %+v", p)
		}
		if len(p.Containers) != 1 || p.Containers[0].State != "running" || p.Containers[0].Ready || p.Containers[0].RestartCount != 0 {
			t.Errorf("containers = %+v", p.Containers)
		}
		if !hasEvent(p.Events, "Unhealthy") {
			t.Errorf("events = %+v, want the Unhealthy one", p.Events)
		}
		wantStdoutEvents(t, r, map[string]int{"SYNC": 1})
	})
	t.Run("failed", func(t *testing.T) {
		r := check(t, "-n", ns, "crash", "--until", "ready", "--timeout", "2m", "-o", "json")
		wantVerdict(t, r, 4, "failed")
		s := lastLineJSON(t, r)
		if s.Verdict != "failed" || s.ExitCode != 4 || len(s.Unsatisfied) != 1 || !strings.Contains(s.Reason, `container "app" is CrashLoopBackOff`) {
			t.Fatalf("JSON summary = %+v\n%s", s, r)
		}
		// kubectl's STATUS, not the phase, in every output.
		if s.Statuses["CrashLoopBackOff"] != 1 || len(s.Statuses) != 1 || !strings.Contains(r.Stderr, "Pods:     1 matched (CrashLoopBackOff 1)") {
			t.Errorf("statuses %v, want CrashLoopBackOff 1, in JSON and text\n%s", s.Statuses, r)
		}
		c := s.Unsatisfied[0].Containers
		if len(c) != 1 || c[0].Reason != "CrashLoopBackOff" || c[0].RestartCount < 1 ||
			c[0].LastTermination == nil || c[0].LastTermination.ExitCode != 1 || c[0].LastTermination.Reason != "Error" {
			t.Errorf("containers = %+v", c)
		}
	})
}

func hasEvent(events []summaryEvent, reason string) bool {
	for _, e := range events {
		if e.Reason == reason {
			return true
		}
	}
	return false
}

// wantStdoutEvents asserts that stdout is JSON watch events only, with at
// least the given count of each type.
func wantStdoutEvents(t *testing.T, r harness.Result, want map[string]int) {
	t.Helper()
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimRight(r.Stdout, "\n"), "\n") {
		var ev struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Type == "" || len(ev.Object) == 0 {
			t.Fatalf("stdout line is not a watch event: %q (%v)", line, err)
		}
		got[ev.Type]++
	}
	for k, n := range want {
		if got[k] < n {
			t.Errorf("stdout has %d %s events, want %d\n%s", got[k], k, n, r)
		}
	}
}
