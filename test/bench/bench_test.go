// Package bench runs a small smoke of the scale benchmark (hack/bench) in
// `make test`: its own local control plane, 300 pods, one run of every
// measured command, and a short churn whose every final state must be
// printed. The full benchmark is `make bench`.
package bench

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/internal/exitcode"
)

// build compiles the bench once per test into a temporary folder. `go run`
// would hide the program's exit code behind its own.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bench")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/kubectl-podsync/kubectl-podsync/hack/bench")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the bench: %v\n%s", err, out)
	}
	return bin
}

type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

func runBench(t *testing.T, bin string, env []string, limit time.Duration, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	// The bench builds the plugin with go build from the module root.
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{code: exitcode.Of(err), stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	if r.code == -1 {
		t.Fatalf("run the bench: %v\nstderr:\n%s", err, r.stderr)
	}
	if ctx.Err() != nil {
		t.Fatalf("the bench did not finish within %s\nstderr:\n%s", limit, r.stderr)
	}
	return r
}

func TestBenchUsageErrorsComeBeforeAnyCluster(t *testing.T) {
	bin := build(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-runs", "0", "-bin", "/nonexistent"}, "bench: -runs 0: want 1 to 100\n"},
		{[]string{"-pods", "5000,2000", "-bin", "/nonexistent"}, "bench: -pods: counts must increase (2000 after 5000)\n"},
		{[]string{"-rate", "0", "-bin", "/nonexistent"}, "bench: -rate: \"0\" is not a rate above 0 and at most 20000 updates per second\n"},
		{[]string{"-update", "apply", "-bin", "/nonexistent"}, "bench: -update \"apply\": want put or patch\n"},
		{[]string{"-only", "kubectl,top", "-bin", "/nonexistent"}, "bench: -only: unknown command \"top\" (known: floor,kubectl,kubectl-json,podsync,podsync-json)\n"},
	} {
		r := runBench(t, bin, []string{"PODSYNC_TOOLS_BIN="}, 2*time.Minute, tc.args...)
		if r.code != 2 || r.stderr != tc.want || r.stdout != "" {
			t.Errorf("bench %q: exit %d, stdout %q, stderr %q; want exit 2, no stdout, stderr %q", tc.args, r.code, r.stdout, r.stderr, tc.want)
		}
		// A usage error is found in the flags: no cluster, no build.
		if r.took > time.Minute {
			t.Errorf("bench %q took %s to refuse its flags", tc.args, r.took)
		}
	}
	r := runBench(t, bin, []string{"PODSYNC_TOOLS_BIN="}, 2*time.Minute, "-smoke")
	if r.code != 2 || !strings.HasPrefix(r.stderr, "bench: -bin or $PODSYNC_TOOLS_BIN is required") {
		t.Errorf("bench -smoke without tools: exit %d, stderr %q; want exit 2 and what to set", r.code, r.stderr)
	}
}

// commandRow matches one row of a size's command table: the label, then
// wall, CPU and peak RSS as "median (min–max)".
var commandRow = regexp.MustCompile(`(?m)^\| (floor: paginated protobuf LIST, discarded|` + "`[^`]+`" + `) \| ([0-9.]+) \([0-9.]+–[0-9.]+\) \| ([0-9.]+) \([0-9.]+–[0-9.]+\) \| ([0-9]+) \([0-9]+–[0-9]+\) \|`)

// churnRow matches the churn table's row: updates sent, pods, lines, the
// three lags, ..., and the lost count in bold at the end.
var churnRow = regexp.MustCompile(`(?m)^\| ([0-9]+) \(([0-9]+)/s, ([0-9]+) failed\) \| ([0-9]+) \| ([0-9]+) \([0-9.]+\) \| (-?[0-9]+) ms \| (-?[0-9]+) ms \| (-?[0-9]+) ms \|.*\| \*\*([0-9]+)\*\* \|$`)

func TestBenchSmoke(t *testing.T) {
	tools := os.Getenv("PODSYNC_TOOLS_BIN")
	if tools == "" {
		t.Fatal("PODSYNC_TOOLS_BIN is not set; `make test` sets it, or run: PODSYNC_TOOLS_BIN=$(hack/build-tools.sh) go test ./test/bench")
	}
	bin := build(t)
	out := filepath.Join(t.TempDir(), "report.md")
	r := runBench(t, bin, nil, 15*time.Minute, "-smoke", "-out", out)
	t.Logf("bench -smoke took %s; stderr:\n%s", r.took.Round(time.Second), r.stderr)
	if r.code != 0 {
		t.Fatalf("bench -smoke exited %d, want 0\nstdout:\n%s", r.code, r.stdout)
	}
	saved, err := os.ReadFile(out)
	if err != nil || string(saved) != r.stdout {
		t.Errorf("-out file (%v) differs from stdout", err)
	}
	for _, want := range []string{"### Run of ", "- command: `", "#### 300 pods", "One LIST of all pods on the wire: protobuf ", "Targets at 300 pods: table wall "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, r.stdout)
		}
	}
	checkCommands(t, r.stdout)
	checkChurn(t, r.stdout)
	for _, want := range []string{"300 pods Running and Ready", "podsync watches 300 pods", "lost 0"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("progress on stderr lacks %q", want)
		}
	}
}

func checkCommands(t *testing.T, report string) {
	t.Helper()
	rows := commandRow.FindAllStringSubmatch(report, -1)
	labels := map[string]bool{}
	for _, row := range rows {
		labels[row[1]] = true
		wall, _ := strconv.ParseFloat(row[2], 64)
		cpu, _ := strconv.ParseFloat(row[3], 64)
		rss, _ := strconv.Atoi(row[4])
		// Every client starts, talks TLS to the API server and decodes 300
		// pods: it takes some time and some memory, and at most a minute.
		if wall <= 0 || wall > 60 || cpu <= 0 || rss < 5 || rss > 4096 {
			t.Errorf("%s: wall %gs, CPU %gs, peak RSS %d MiB: not a measurement of a real run", row[1], wall, cpu, rss)
		}
	}
	for _, want := range []string{"floor: paginated protobuf LIST, discarded", "`kubectl get pods -A`", "`kubectl get pods -A -o json`", "`kubectl podsync -A --once`", "`kubectl podsync -A --once -o json`"} {
		if !labels[want] {
			t.Errorf("no measured row for %s in:\n%s", want, report)
		}
	}
}

func checkChurn(t *testing.T, report string) {
	t.Helper()
	m := churnRow.FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("no churn row in:\n%s", report)
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	sent, failed, pods, lines, p50, maxLag, lost := n(1), n(3), n(4), n(5), n(6), n(8), n(9)
	// -smoke asks for 300 updates/s for 5 s over 299 pods.
	if sent != 1500 || failed != 0 || pods != 299 {
		t.Errorf("churn sent %d updates (%d failed) to %d pods, want 1500, none failed, 299 pods", sent, failed, pods)
	}
	// Coalescing may merge updates of one pod, never invent lines.
	if lines < pods || lines > sent {
		t.Errorf("churn printed %d lines for %d updates of %d pods", lines, sent, pods)
	}
	if lost != 0 {
		t.Errorf("churn lost %d pods' final states", lost)
	}
	// Generous: the machine is shared; the report states the real numbers.
	if p50 <= 0 || maxLag > 60_000 {
		t.Errorf("churn lag p50 %d ms, max %d ms: want a positive p50 and a max under a minute", p50, maxLag)
	}
}
