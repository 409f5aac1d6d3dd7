package checks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// verdictAfter is the time the Verdict line reports.
func verdictAfter(t *testing.T, r string) time.Duration {
	t.Helper()
	m := regexp.MustCompile(`Verdict:  .* after (\S+)\n`).FindStringSubmatch(r)
	if m == nil {
		t.Fatalf("no Verdict line with a time\n%s", r)
	}
	d, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatalf("Verdict time %q: %v", m[1], err)
	}
	return d
}

// crashLoopFor starts a one-pod Deployment that crash-loops until stop,
// when its template loses the crash loop and a healthy pod replaces it.
func crashLoopFor(t *testing.T, ns string, stop time.Duration) {
	t.Helper()
	env.Apply(t, ns, deploymentYAML("loop", "registry.example/loop:1", 1, state(localcluster.StateCrashLoop)))
	timer := time.AfterFunc(stop, func() {
		if out, err := env.KubectlErr("patch", "deployment/loop", "-n", ns, "--type=json",
			"-p", `[{"op":"remove","path":"/spec/template/metadata/annotations/podsync.test~1state"}]`); err != nil {
			t.Errorf("end the crash loop: %v\n%s", err, out)
		}
	})
	t.Cleanup(func() { timer.Stop() })
}

// A crash loop that stops after 20 s: without --fail-after it fails at the
// first CrashLoopBackOff; --fail-after 60s rides through it to 0;
// --fail-after 10s fails 10 s after the first CrashLoopBackOff, saying how
// long the reason held.
func TestFailAfterCrashLoopThatStops(t *testing.T) {
	t.Parallel()
	const stop = 20 * time.Second
	t.Run("no flag", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		crashLoopFor(t, ns, stop)
		r := check(t, "-n", ns, "-l", "app=loop", "--until", "ready", "--timeout", "3m")
		wantVerdict(t, r, 4, "failed")
		wantStderr(t, r, `container "app" is CrashLoopBackOff: back-off`)
		if after := verdictAfter(t, r.Stderr); after >= 10*time.Second {
			t.Errorf("verdict after %s, want at the first CrashLoopBackOff, well before 10s", after)
		}
	})
	t.Run("fail-after 60s", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		crashLoopFor(t, ns, stop)
		r := check(t, "-n", ns, "-l", "app=loop", "--until", "ready", "--fail-after", "60s", "--timeout", "3m")
		t.Logf("stderr:\n%s", r.Stderr)
		wantVerdict(t, r, 0, "met")
		if after := verdictAfter(t, r.Stderr); after < stop-2*time.Second {
			t.Errorf("met after %s, before the crash loop stopped at %s", after, stop)
		}
		wantLines(t, r.Stdout, `^UPDATE\s+loop-\S+\s+0/1\s+CrashLoopBackOff\s`, 1)
	})
	t.Run("fail-after 10s", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		crashLoopFor(t, ns, stop)
		r := check(t, "-n", ns, "-l", "app=loop", "--until", "ready", "--fail-after", "10s", "--timeout", "3m")
		t.Logf("stderr:\n%s", r.Stderr)
		wantVerdict(t, r, 4, "failed")
		m := regexp.MustCompile(`container "app" is CrashLoopBackOff for (\S+), more than --fail-after 10s: back-off`).FindStringSubmatch(r.Stderr)
		if m == nil {
			t.Fatalf("stderr does not say how long CrashLoopBackOff held\n%s", r)
		}
		held, err := time.ParseDuration(m[1])
		if err != nil || held < 10*time.Second || held > 12*time.Second {
			t.Errorf("held %s (%v), want 10s to 12s: the timer ends it", m[1], err)
		}
		// The first CrashLoopBackOff comes ~2 s after the pod starts.
		if after := verdictAfter(t, r.Stderr); after < 10*time.Second || after > 10*time.Second+time.Minute {
			t.Errorf("verdict after %s, want at the first CrashLoopBackOff + 10s", after)
		}
	})
}

// A reason that no later message renews (a container left waiting in
// CreateContainerConfigError) still fails the check when --fail-after
// runs out: the run's own timer judges it, not the next message.
func TestFailAfterWithoutLaterMessages(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, harness.PodYAML("stuck", map[string]string{
		localcluster.StateAnnotation:   localcluster.StateWaiting,
		localcluster.ReasonAnnotation:  "CreateContainerConfigError",
		localcluster.MessageAnnotation: `secret "db" not found`,
	}))
	waitPods(t, ns, "app=stuck", 1, "waiting in CreateContainerConfigError", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
			p.Status.ContainerStatuses[0].State.Waiting.Reason == "CreateContainerConfigError"
	})
	r := check(t, "-n", ns, "stuck", "--until", "ready", "--fail-after", "5s", "--timeout", "45s")
	t.Logf("stderr:\n%s", r.Stderr)
	wantVerdict(t, r, 4, "failed")
	wantStderr(t, r, `pod `+ns+`/stuck: container "app" is CreateContainerConfigError for 5`,
		`, more than --fail-after 5s: secret "db" not found`)
	if after := verdictAfter(t, r.Stderr); after < 5*time.Second || after > 35*time.Second {
		t.Errorf("verdict after %s, want at about --fail-after 5s", after)
	}
}

// readyThenCrash starts a pod, waits until it is ready (t), and makes it
// crash-loop at t+crash.
func readyThenCrash(t *testing.T, ns string, crash time.Duration) {
	t.Helper()
	env.Apply(t, ns, harness.PodYAML("steady", nil))
	harness.WaitReady(t, env.Clientset(t), ns, "steady")
	timer := time.AfterFunc(crash, func() {
		if out, err := env.KubectlErr("annotate", "pod/steady", "-n", ns,
			localcluster.StateAnnotation+"="+localcluster.StateCrashLoop); err != nil {
			t.Errorf("make the pod crash: %v\n%s", err, out)
		}
	})
	t.Cleanup(func() { timer.Stop() })
}

// A pod ready at t that crashes at t+10s: --stable-for 30s fails at about
// t+10s naming the restart; --stable-for 5s is met at about t+5s; without
// the flag the check is met at t.
func TestStableForWindow(t *testing.T) {
	t.Parallel()
	const crash = 10 * time.Second
	t.Run("no flag", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		readyThenCrash(t, ns, crash)
		r := check(t, "-n", ns, "steady", "--until", "ready", "--timeout", "2m")
		wantVerdict(t, r, 0, "met")
		if after := verdictAfter(t, r.Stderr); after >= 5*time.Second {
			t.Errorf("met after %s, want at once", after)
		}
	})
	t.Run("stable-for 30s", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		readyThenCrash(t, ns, crash)
		r := check(t, "-n", ns, "steady", "--until", "ready", "--stable-for", "30s", "--progress-interval", "4s", "--timeout", "2m")
		t.Logf("stderr:\n%s", r.Stderr)
		wantVerdict(t, r, 4, "failed")
		wantStderr(t, r, `pod `+ns+`/steady: container "app" restarted `, ` into --stable-for 30s (restarts 0 -> 1)`)
		if !regexp.MustCompile(`(?m)^podsync: waiting \d+s: met, stable for \d+s of 30s$`).MatchString(r.Stderr) {
			t.Errorf("no progress line shows the window\n%s", r)
		}
		if after := verdictAfter(t, r.Stderr); after < crash || after > crash+30*time.Second {
			t.Errorf("failed after %s, want at about the crash at %s", after, crash)
		}
	})
	t.Run("stable-for 5s", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		readyThenCrash(t, ns, crash)
		r := check(t, "-n", ns, "steady", "--until", "ready", "--stable-for", "5s", "--timeout", "2m")
		t.Logf("stderr:\n%s", r.Stderr)
		wantVerdict(t, r, 0, "met")
		if after := verdictAfter(t, r.Stderr); after < 5*time.Second || after > crash {
			t.Errorf("met after %s, want at about 5s, before the crash", after)
		}
	})
	t.Run("timeout in the window", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		readyThenCrash(t, ns, crash)
		r := check(t, "-n", ns, "steady", "--until", "ready", "--stable-for", "60s", "--timeout", "6s")
		wantVerdict(t, r, 3, "not met")
		if !regexp.MustCompile(`(?m)^Stable:   cut short \S+ into 1m0s: the run ended first$`).MatchString(r.Stderr) {
			t.Errorf("the summary does not say the window was cut short\n%s", r)
		}
	})
}

// stabilityJSON is the JSON summary's account of the --stable-for window.
type stabilityJSON struct {
	StableForSeconds float64 `json:"stableForSeconds"`
	Outcome          string  `json:"outcome"`
	HeldSeconds      float64 `json:"heldSeconds"`
	Reason           string  `json:"reason"`
	Pod              string  `json:"pod"`
	Container        string  `json:"container"`
	Message          string  `json:"message"`
}

// windowRun runs a --stable-for check under GitHub Actions with -o json and
// returns the result, the JSON summary's stability and the job summary.
func windowRun(t *testing.T, ns string, args ...string) (harness.Result, *stabilityJSON, string) {
	t.Helper()
	md := filepath.Join(t.TempDir(), "summary.md")
	gh := []string{"GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY=" + md}
	r := env.PodsyncEnv(t, runLimit, gh, append([]string{"-n", ns, "steady", "--until", "ready", "--timeout", "2m", "-o", "json"}, args...)...)
	t.Logf("stderr:\n%s", r.Stderr)
	var s struct {
		Stability *stabilityJSON `json:"stability"`
	}
	lines := strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
		t.Fatalf("the JSON summary: %v\n%s", err, r)
	}
	body, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	return r, s.Stability, string(body)
}

// The summary on stderr, the JSON summary and the GitHub job summary each
// say what window was asked for and how it ended: held for its length, or
// broken, when and by what.
func TestStableForSummary(t *testing.T) {
	t.Parallel()
	const crash = 10 * time.Second
	t.Run("broken", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		readyThenCrash(t, ns, crash)
		r, s, md := windowRun(t, ns, "--stable-for", "30s")
		wantVerdict(t, r, 4, "failed")
		line := regexp.MustCompile(`(?m)^Stable:   broken (\S+) into 30s: pod ` + regexp.QuoteMeta(ns) +
			`/steady: container "app" restarted \(restarts 0 -> 1\)$`).FindStringSubmatch(r.Stderr)
		if line == nil {
			t.Errorf("the summary has no Stable: line naming the restart\n%s", r)
		} else if into, err := time.ParseDuration(line[1]); err != nil || into < crash-time.Second || into > crash+20*time.Second {
			t.Errorf("broken %s into the window (%v), want at about the crash at %s", line[1], err, crash)
		}
		if s == nil || s.StableForSeconds != 30 || s.Outcome != "broken" || s.Reason != "Restarted" ||
			s.Pod != ns+"/steady" || s.Container != "app" || s.Message != "restarts 0 -> 1" ||
			s.HeldSeconds < crash.Seconds()-1 || s.HeldSeconds > 30 {
			t.Errorf("JSON stability = %+v", s)
		}
		if !strings.Contains(md, "Stability window (--stable-for): broken ") ||
			!strings.Contains(md, ` into 30s: pod `+ns+`/steady: container "app" restarted \(restarts 0 -&gt; 1\)`) {
			t.Errorf("the job summary does not say how the window broke:\n%s", md)
		}
	})
	t.Run("held", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		readyThenCrash(t, ns, crash)
		r, s, md := windowRun(t, ns, "--stable-for", "5s")
		wantVerdict(t, r, 0, "met")
		wantStderr(t, r, "\nStable:   held for 5s\n")
		if s == nil || *s != (stabilityJSON{StableForSeconds: 5, Outcome: "held", HeldSeconds: 5}) {
			t.Errorf("JSON stability = %+v", s)
		}
		if !strings.Contains(md, "Stability window (--stable-for): held for 5s\n") {
			t.Errorf("the job summary does not say the window held:\n%s", md)
		}
	})
	t.Run("no flag", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		readyThenCrash(t, ns, crash)
		r, s, md := windowRun(t, ns)
		wantVerdict(t, r, 0, "met")
		if strings.Contains(r.Stderr, "Stable:") || s != nil || strings.Contains(md, "Stability") {
			t.Errorf("a window is reported without --stable-for: %+v\n%s\n%s", s, r, md)
		}
	})
}
