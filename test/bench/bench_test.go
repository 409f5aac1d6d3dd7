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

// build compiles the bench, a module of its own in hack/bench, once per
// test into a temporary folder. `go run` would hide the program's exit code
// behind its own.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bench")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join("..", "..", "hack", "bench")
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
		{[]string{"-only", "kubectl,top", "-bin", "/nonexistent"}, "bench: -only: unknown command \"top\" (known: floor,floor-500,floor-1000,floor-5000,floor-10000,floor-all,floor-watchlist,bytes-pods,bytes-table,bytes-table-metadata,kubectl,kubectl-json,podsync,podsync-json,podsync-bin)\n"},
		{[]string{"-clusters", "1", "-bin", "/nonexistent"}, "bench: -clusters 1: want 0 (none) or 2 to 5\n"},
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
// wall, CPU, peak RSS and the first row, each as "median (min–max)", the
// first row "—" for commands that print no rows.
var commandRow = regexp.MustCompile(`(?m)^\| (floor: [^|]*?|` + "`[^`]+`" + `)( \*\*\(floor\)\*\*)? \| ([0-9.]+) \([0-9.]+–[0-9.]+\) \| ([0-9.]+) \([0-9.]+–[0-9.]+\) \| (—|([0-9.]+) \([0-9.]+–[0-9.]+\)) \| ([0-9]+) \([0-9]+–[0-9]+\) \| (—|([0-9.]+) \([0-9.]+–[0-9.]+\)) \|`)

// apiMemoryRow matches a row of the API server's memory per client run: RSS
// before, peak and added, in MiB.
var apiMemoryRow = regexp.MustCompile("(?m)^\\| (`[^`]+`|floor: [^|]+) \\| [0-9]+ \\| ([0-9]+) \\| ([0-9]+) \\| (-?[0-9]+) \\|$")

// churnRow matches a churn table's row: updates sent, pods, lines, the
// three lags, ..., the watcher's CPU per line, ..., and the lost count in
// bold at the end.
var churnRow = regexp.MustCompile(`(?m)^\| ([0-9]+) \(([0-9]+)/s, ([0-9]+) failed\) \| ([0-9]+) \| ([0-9]+) \([0-9.]+\) \| (-?[0-9]+) ms \| (-?[0-9]+) ms \| (-?[0-9]+) ms \| [^|]* \| [^|]* \| ([0-9.]+) ms \|.*\| \*\*([0-9]+)\*\* \|$`)

// apiServerRSS is the control plane's memory once the pods are loaded.
var apiServerRSS = regexp.MustCompile(`Control plane once loaded: kube-apiserver RSS ([0-9]+) MiB, etcd RSS ([0-9]+) MiB, etcd database ([0-9.]+) MB\.`)

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
	for _, want := range []string{
		"### Run of ", "- command: `", "#### 300 pods", "One LIST of all pods on the wire: protobuf ",
		"- kube-apiserver memory added by a client: its VmHWM, reset through /proc/",
		"- pods written: one annotation of one pod before each measured run (-live)",
		"kube-apiserver memory while each further run of a client was served, every run on a freshly restarted API server",
		"Floor at 300 pods: floor: protobuf ",
		"Targets at 300 pods:",
		"| `podsync -A --once` wall ≤ 1.25× the floor's | ",
		"| time to the first SYNC row ≤ 1.5 s and ≤ kubectl's first row | ",
		"| kube-apiserver memory added by `podsync -A --once` ≤ the floor's + 10 % (medians) | ",
		"| churn at 300/s: CPU per update ≤ 1.25× the floor's watch | ",
		"| churn at 300/s: lag p99 ≤ the floor's watch p99 + 25 ms, nothing lost | ",
		"| verdict latency at 300/s, the last pod turns Ready: p99 ≤ 100 ms | ",
		"| verdict latency at 300/s, a container enters CrashLoopBackOff (`--log-lines 0`): p99 ≤ 100 ms | ",
		"| `kubectl podsync -A --until ready` | the last pod turns Ready | 1 | ",
		"| `kubectl podsync -A --until ready` | a container enters CrashLoopBackOff (`--log-lines 0`) | 1 | ",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "WatchList: **not supported") {
		t.Errorf("the pinned kube-apiserver serves WatchList, the report says it does not:\n%s", r.stdout)
	}
	checkControlPlane(t, r.stdout)
	checkCommands(t, r.stdout)
	checkAPIMemory(t, r.stdout)
	checkChurn(t, r.stdout)
	checkVerdicts(t, r.stdout)
	for _, want := range []string{"300 pods Running and Ready", "podsync watches 300 pods", "lost 0"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("progress on stderr lacks %q", want)
		}
	}
}

// checkVerdicts wants every verdict latency trial to have ended with the
// expected exit code within a time that is a measurement.
func checkVerdicts(t *testing.T, report string) {
	t.Helper()
	rows := 0
	for _, line := range strings.Split(report, "\n") {
		if !strings.HasPrefix(line, "| `kubectl podsync -A --until ready`") && !strings.HasPrefix(line, "| floor: `kubectl wait`") {
			continue
		}
		rows++
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 8 || cells[7] != "0" {
			t.Errorf("verdict row %q: want 8 cells and no failed trial", line)
			continue
		}
		if p99, err := time.ParseDuration(strings.ReplaceAll(cells[4], " ", "")); err != nil || p99 <= 0 || p99 > time.Minute {
			t.Errorf("verdict row %q: p99 %q is not a measurement", line, cells[4])
		}
	}
	if rows != 4 {
		t.Errorf("%d verdict latency rows, want one per case of podsync and of the floor:\n%s", rows, report)
	}
}

func checkControlPlane(t *testing.T, report string) {
	t.Helper()
	m := apiServerRSS.FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("no control plane memory in:\n%s", report)
	}
	api, _ := strconv.Atoi(m[1])
	etcd, _ := strconv.Atoi(m[2])
	db, _ := strconv.ParseFloat(m[3], 64)
	// An API server holds a few hundred MiB before any pod; etcd's
	// database holds 300 pods of several KB each.
	if api < 100 || api > 8192 || etcd < 5 || db < 1 {
		t.Errorf("control plane: kube-apiserver %d MiB, etcd %d MiB, database %g MB: not a measurement", api, etcd, db)
	}
}

// checkAPIMemory wants the API server's memory for podsync and kubectl.
func checkAPIMemory(t *testing.T, report string) {
	t.Helper()
	seen := map[string]bool{}
	for _, row := range apiMemoryRow.FindAllStringSubmatch(report, -1) {
		seen[row[1]] = true
		idle, _ := strconv.Atoi(row[2])
		peak, _ := strconv.Atoi(row[3])
		added, _ := strconv.Atoi(row[4])
		// A restarted API server holds a few hundred MiB; its peak is
		// reset to its resident set before the client, so it adds nothing
		// below zero; the columns are rounded apart.
		if idle < 100 || peak < idle || added < 0 || added > 4096 || abs(peak-idle-added) > 1 {
			t.Errorf("%s: kube-apiserver %d MiB before, %d at the peak, +%d: not a measurement", row[1], idle, peak, added)
		}
	}
	for _, want := range []string{"`kubectl get pods -A`", "`kubectl podsync -A --once`"} {
		if !seen[want] {
			t.Errorf("no kube-apiserver memory for %s in:\n%s", want, report)
		}
	}
	floors := 0
	for label := range seen {
		if strings.HasPrefix(label, "floor: ") {
			floors++
		}
	}
	if floors != 1 {
		t.Errorf("kube-apiserver memory for %d floors, want the floor of the size alone, in:\n%s", floors, report)
	}
}

func abs(n int) int { return max(n, -n) }

func checkCommands(t *testing.T, report string) {
	t.Helper()
	rows := commandRow.FindAllStringSubmatch(report, -1)
	labels := map[string]bool{}
	floors := 0
	var apiCPU float64
	for _, row := range rows {
		label := row[1]
		labels[label] = true
		if row[2] != "" {
			floors++
		}
		wall, _ := strconv.ParseFloat(row[3], 64)
		cpu, _ := strconv.ParseFloat(row[4], 64)
		rss, _ := strconv.Atoi(row[7])
		// Every client starts, talks TLS to the API server and decodes 300
		// pods: it takes some time and some memory, and at most a minute.
		if wall <= 0 || wall > 60 || cpu <= 0 || rss < 5 || rss > 4096 {
			t.Errorf("%s: wall %gs, CPU %gs, peak RSS %d MiB: not a measurement of a real run", label, wall, cpu, rss)
		}
		// The API server runs on this machine: its CPU is read for every
		// client.
		if row[5] == "—" {
			t.Errorf("%s: no kube-apiserver CPU", label)
		}
		used, _ := strconv.ParseFloat(row[6], 64)
		apiCPU += used
		rowsPrinted := label == "`kubectl get pods -A`" || strings.HasPrefix(label, "`kubectl podsync")
		switch first, _ := strconv.ParseFloat(row[9], 64); {
		case rowsPrinted && (row[8] == "—" || first <= 0 || first > wall):
			t.Errorf("%s: first row %q of a %gs run: want a time within the run", label, row[8], wall)
		case !rowsPrinted && row[8] != "—":
			t.Errorf("%s prints no rows, yet has a first row %q", label, row[8])
		}
	}
	if apiCPU <= 0 {
		t.Errorf("the API server used no CPU serving any client:\n%s", report)
	}
	for _, want := range []string{
		"floor: protobuf LIST, pages of 500", "floor: protobuf LIST, pages of 1,000", "floor: protobuf LIST, pages of 5,000",
		"floor: protobuf LIST, pages of 10,000", "floor: protobuf LIST, unpaginated", "floor: protobuf WatchList stream",
		"`kubectl get pods -A`", "`kubectl get pods -A -o json`", "`kubectl podsync -A --once`", "`kubectl podsync -A --once -o json`",
	} {
		if !labels[want] {
			t.Errorf("no measured row for %s in:\n%s", want, report)
		}
	}
	if floors != 1 {
		t.Errorf("%d rows marked as the floor, want the fastest variant only", floors)
	}
}

// churnWatchers begin the churn paragraphs of podsync and of the two
// watchers -smoke measures beside it, in the order they run.
var churnWatchers = []string{
	"Churn: `kubectl podsync -A --watch-only -o json` watching 300 pods",
	"Churn: `kubectl get pods -A -w --watch-only --output-watch-events -o json` watching 300 pods",
	"Churn: floor: a protobuf watch printing one line of metadata per event watching 300 pods",
}

// checkChurn wants a churn row for podsync, kubectl and the floor, each a
// measurement, and podsync's CPU per update beside theirs in the targets.
func checkChurn(t *testing.T, report string) {
	t.Helper()
	at := 0
	for _, head := range churnWatchers {
		i := strings.Index(report[at:], head)
		if i < 0 {
			t.Fatalf("no %q after the churn before it in:\n%s", head, report)
		}
		at += i + len(head)
		m := churnRow.FindStringSubmatch(report[at:])
		if m == nil {
			t.Fatalf("no churn row after %q in:\n%s", head, report)
		}
		checkChurnRow(t, head, m)
	}
	// The churn targets compare podsync with the floor's watch of the same run.
	if !regexp.MustCompile(`\| churn at 300/s: CPU per update ≤ 1\.25× the floor's watch \| [0-9.]+ against [0-9.]+ ms: [0-9.]+× \| (met|\*\*missed\*\*) \|`).MatchString(report) {
		t.Errorf("the CPU target lacks podsync's and the floor's CPU per update:\n%s", report)
	}
	if !regexp.MustCompile(`\| churn at 300/s: lag p99 ≤ the floor's watch p99 \+ 25 ms, nothing lost \| p99 [0-9]+ ms against [0-9]+ ms, lost 0 \|`).MatchString(report) {
		t.Errorf("the lag target lacks podsync's and the floor's p99:\n%s", report)
	}
}

func checkChurnRow(t *testing.T, head string, m []string) {
	t.Helper()
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	sent, failed, pods, lines, p50, maxLag, lost := n(1), n(3), n(4), n(5), n(6), n(8), n(10)
	// A watcher decodes and prints each update: some CPU, and far less
	// than 50 ms a line (a whole core for 20 lines a second).
	if cpu, _ := strconv.ParseFloat(m[9], 64); cpu <= 0 || cpu > 50 {
		t.Errorf("%s: CPU per printed line %g ms: not a measurement", head, cpu)
	}
	// -smoke asks for 300 updates/s for 3 s over 299 pods.
	if sent != 900 || failed != 0 || pods != 299 {
		t.Errorf("%s: sent %d updates (%d failed) to %d pods, want 900, none failed, 299 pods", head, sent, failed, pods)
	}
	// Coalescing may merge updates of one pod, never invent lines.
	if lines < pods || lines > sent {
		t.Errorf("%s: printed %d lines for %d updates of %d pods", head, lines, sent, pods)
	}
	if lost != 0 {
		t.Errorf("%s: lost %d pods' final states", head, lost)
	}
	// Generous: the machine is shared; the report states the real numbers.
	if p50 <= 0 || maxLag > 60_000 {
		t.Errorf("%s: lag p50 %d ms, max %d ms: want a positive p50 and a max under a minute", head, p50, maxLag)
	}
}
