package compare

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

const (
	// earliest is how much sooner than kubectl podsync may report a
	// success: two processes started together on a busy machine, never a
	// verdict taken on a state kubectl does not call done.
	earliest = time.Second
	// decideWithin is the --timeout of both tools where kubectl decides:
	// only a guard, each ends as soon as it knows.
	decideWithin = 90 * time.Second
	// waitFor is the --timeout of both tools where kubectl waits for ever:
	// podsync's answer there is exit 3 at its --timeout.
	waitFor = 10 * time.Second
	// runLimit is how long any one tool may run before the test kills it.
	runLimit = 3 * time.Minute
)

// kubectlSays is what kubectl does in a scenario.
type kubectlSays int

const (
	// decides: kubectl ends before its --timeout with a verdict; exit 0 is
	// a success (a failure with kubectlMeansFailed).
	decides kubectlSays = iota
	// waits: kubectl cannot decide and waits until its --timeout.
	waits
	// refuses: kubectl ends at once without judging any workload: a kind
	// or strategy it does not follow, an object that does not exist yet,
	// or no object at all (where it even exits 0); refusal holds what it
	// says.
	refuses
)

// tool is one command of a scenario, run as `kubectl ARGS`.
type tool struct {
	args  []string
	stdin string
}

func (tl tool) String() string {
	s := "kubectl " + strings.Join(tl.args, " ")
	if i := strings.Index(s, " -n "); i >= 0 {
		// The namespace differs at every run; the table reads better without.
		rest := s[i+4:]
		if j := strings.IndexByte(rest, ' '); j >= 0 {
			s = s[:i] + rest[j:]
		} else {
			s = s[:i]
		}
	}
	return s
}

// scenario is one situation a CI job waits on. prepare brings the cluster
// to the starting point; both tools then start at the same moment, and
// during (if set) changes the cluster while they run.
type scenario struct {
	name    string
	prepare func(t *testing.T, ns string)
	during  func(t *testing.T, ns string)
	// podsync and kubectl are the arguments after `kubectl podsync -n NS`
	// and after `kubectl`; --timeout and -n are added.
	podsync, kubectl []string
	// stdin is given to both tools.
	stdin string
	// want is podsync's exit code.
	want int
	// says is what kubectl does; refusal is its words when it refuses.
	says    kubectlSays
	refusal string
	// kubectlMeansFailed: kubectl's success is the workload's failure
	// (kubectl wait --for=condition=Failed).
	kubectlMeansFailed bool
	// keepsJudging: podsync, by design, keeps judging after kubectl's
	// success (--stable-for) and may fail on what it sees then; kubectl
	// must still have passed, and podsync must not end before it.
	keepsJudging bool
	// stderr holds what podsync's stderr must say; with onlyStderr, its
	// one line is all podsync says.
	stderr     []string
	onlyStderr bool
}

// timeout is the --timeout of both tools: short where one of them can
// only end at it.
func (sc scenario) timeout() time.Duration {
	if sc.says == waits || sc.want == 3 {
		return waitFor
	}
	return decideWithin
}

// result is one tool's run, with when it ended.
type result struct {
	harness.Result
	end time.Time
}

// row is a scenario's line in the table logged at the end.
type row struct {
	name             string
	podsync, kubectl string
	p, k             result
}

// TestCompareWithKubectl runs every scenario of scenarios(), each in its
// own namespace, all at once, and checks podsync against kubectl.
func TestCompareWithKubectl(t *testing.T) {
	var mu sync.Mutex
	var rows []row
	t.Cleanup(func() { report(t, rows) })
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			if sc.prepare != nil {
				sc.prepare(t, ns)
			}
			timeout := sc.timeout().String()
			p := tool{args: append(append([]string{"podsync", "-n", ns}, withManifest(sc.podsync, ns)...), "--timeout", timeout), stdin: sc.stdin}
			k := tool{args: append(withManifest(sc.kubectl, ns), "-n", ns, "--timeout="+timeout), stdin: sc.stdin}
			pr, kr := runTogether(t, ns, sc.during, p, k)
			t.Logf("%s: exit %d after %s\n%s", p, pr.Code, pr.Took.Round(100*time.Millisecond), lastLines(pr.Stderr, 6))
			t.Logf("%s: exit %d after %s\n%s", k, kr.Code, kr.Took.Round(100*time.Millisecond), lastLines(kr.Stderr+kr.Stdout, 3))
			mu.Lock()
			rows = append(rows, row{name: sc.name, podsync: p.String(), kubectl: k.String(), p: pr, k: kr})
			mu.Unlock()
			judge(t, sc, pr, kr)
		})
	}
}

// manifestArg in a tool's arguments stands for the scenario's manifest
// file, manifestPath.
const manifestArg = "MANIFEST"

// manifestPath is where a scenario in ns writes its manifest.
func manifestPath(ns string) string { return filepath.Join(env.Tmp, ns+".yaml") }

// withManifest is a copy of args with manifestArg replaced.
func withManifest(args []string, ns string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		if a == manifestArg {
			out[i] = manifestPath(ns)
		}
	}
	return out
}

// judge holds podsync's result p to the scenario and to kubectl's k.
func judge(t *testing.T, sc scenario, p, k result) {
	t.Helper()
	if p.Code != sc.want {
		t.Errorf("podsync exit %d, want %d\n%s", p.Code, sc.want, p.Result)
	}
	for _, s := range sc.stderr {
		if !strings.Contains(p.Stderr, s) {
			t.Errorf("podsync's stderr has no %q\n%s", s, p.Result)
		}
	}
	if sc.onlyStderr && strings.Count(p.Stderr, "\n") != 1 {
		t.Errorf("podsync's stderr holds more than its one line\n%s", p.Result)
	}
	timedOut := k.Code != 0 && strings.Contains(k.Stderr, "timed out waiting")
	switch sc.says {
	case decides:
		if timedOut {
			t.Fatalf("kubectl did not decide within %s\n%s", sc.timeout(), k.Result)
		}
		if sc.keepsJudging {
			if k.Code != 0 || p.end.Before(k.end) {
				t.Errorf("kubectl exit %d after %s, podsync after %s: want kubectl to pass, then podsync to keep judging",
					k.Code, k.Took.Round(time.Millisecond), p.Took.Round(time.Millisecond))
			}
			return
		}
		met := k.Code == 0 && !sc.kubectlMeansFailed
		if met != (p.Code == 0) {
			t.Errorf("kubectl says %s (exit %d), podsync exit %d", map[bool]string{true: "met", false: "failed"}[met], k.Code, p.Code)
		}
		if met && p.Code == 0 && p.end.Before(k.end.Add(-earliest)) {
			t.Errorf("podsync met the check %s before kubectl: more than %s", k.end.Sub(p.end).Round(time.Millisecond), earliest)
		}
	case waits:
		if !timedOut {
			t.Fatalf("kubectl decided (exit %d) where it was expected to wait until its --timeout\n%s", k.Code, k.Result)
		}
		if p.Code == 3 {
			if p.Took < sc.timeout() {
				t.Errorf("podsync gave exit 3 after %s, before its --timeout %s", p.Took, sc.timeout())
			}
			if !strings.Contains(p.Stderr, "Verdict:  not met (exit 3) after ") {
				t.Errorf("podsync's stderr has no summary\n%s", p.Result)
			}
		}
	case refuses:
		if !strings.Contains(k.Stderr+k.Stdout, sc.refusal) {
			t.Errorf("kubectl did not refuse with %q\n%s", sc.refusal, k.Result)
		}
	}
}

// runTogether starts both tools at the same moment, runs during (on the
// test goroutine) while they run, and returns their results.
func runTogether(t *testing.T, ns string, during func(*testing.T, string), p, k tool) (result, result) {
	t.Helper()
	var pr, kr result
	var wg sync.WaitGroup
	wg.Go(func() { pr = runTool(p) })
	wg.Go(func() { kr = runTool(k) })
	if during != nil {
		during(t, ns)
	}
	wg.Wait()
	return pr, kr
}

// runTool runs `kubectl ARGS` to its end; each tool has its own --timeout,
// runLimit only guards against one that ignores it.
func runTool(tl tool) result {
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	// The plugin under test is built with -race, whose runtime sleeps 1 s
	// before a successful exit: not part of the time to a verdict.
	cmd := env.Command(ctx, []string{"GORACE=atexit_sleep_ms=0"}, tl.args...)
	cmd.Stdin = strings.NewReader(tl.stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	end := time.Now()
	return result{Result: harness.Result{Code: harness.ExitCode(err), Stdout: stdout.String(), Stderr: stderr.String(), Took: end.Sub(start)}, end: end}
}

// report logs the table of exit codes and times, and writes it to the
// file PODSYNC_COMPARE_OUT names, if set.
func report(t *testing.T, rows []row) {
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	var b strings.Builder
	b.WriteString("| scenario | podsync | exit | time | kubectl | exit | time |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | `%s` | %d | %s | `%s` | %d | %s |\n", r.name, r.podsync, r.p.Code, r.p.Took.Round(100*time.Millisecond),
			r.kubectl, r.k.Code, r.k.Took.Round(100*time.Millisecond))
	}
	t.Logf("podsync beside kubectl:\n%s", b.String())
	if out := os.Getenv("PODSYNC_COMPARE_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// lastLines keeps the end of a tool's output for the log.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
