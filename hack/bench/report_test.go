package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// result is a command measured once per wall time, with peak RSS rss MiB;
// the API server's CPU is half of each wall time.
func result(c command, rss float64, walls ...float64) *cmdResult {
	r := &cmdResult{cmd: c}
	for _, w := range walls {
		wall := time.Duration(w * float64(time.Second))
		r.samples = append(r.samples, sample{wall: wall, maxRSS: int64(rss * (1 << 20)), firstRow: -1, apiCPU: wall / 2})
	}
	return r
}

func byID(t *testing.T, id string) command {
	t.Helper()
	c := commandByID(id)
	if c == nil {
		t.Fatalf("no command %s", id)
	}
	return *c
}

func TestBestFloorIsTheLowestMedianWall(t *testing.T) {
	s := &sizeResult{pods: 150000, commands: []*cmdResult{
		result(byID(t, "floor-500"), 60, 21.8, 21.0, 22.5),
		result(byID(t, "floor-1000"), 70, 11.5, 11.9, 11.2),
		// Fastest once, but not in the median.
		result(byID(t, "floor-5000"), 128, 6.7, 13, 14),
		result(byID(t, "floor-all"), 1900, 8.7, 8.9, 8.8),
		{cmd: byID(t, "floor-10000"), skipped: "does not fit: ..."},
		// Not a floor, however fast.
		result(byID(t, "podsync"), 900, 1, 1, 1),
	}}
	s.commands[3].samples[1].apiCPU = -1 // not measured once: no number
	if got := s.bestFloor(); got == nil || got.cmd.id != "floor-all" {
		t.Fatalf("best floor %v, want floor-all (median 8.8 s)", got)
	}
	var b strings.Builder
	(&report{cfg: &config{}}).writeCommands(&b, s)
	containsAll(t, "command table", b.String(),
		"| command | wall s | CPU s | kube-apiserver CPU s | peak RSS MiB |",
		"| floor: protobuf LIST, unpaginated **(floor)** | 8.80 (8.70–8.90) | 0.00 (0.00–0.00) | — | 1900 (1900–1900) |",
		"| floor: protobuf LIST, pages of 1,000 | 11.50 (11.20–11.90) | 0.00 (0.00–0.00) | 5.75 (5.60–5.95) | 70 (70–70) |",
		"| floor: protobuf LIST, pages of 10,000 | does not fit: ... | | | | | | | | |",
		"| `kubectl podsync -A --once` | 1.00 (1.00–1.00) | 0.00 (0.00–0.00) | 0.50 (0.50–0.50) | 900 (900–900) | — |  |  | 0.11× | 0.47× |",
		"Floor at 150000 pods: floor: protobuf LIST, unpaginated, the fastest of the floor variants (median wall 8.80 s, peak RSS 1900 MiB)",
	)
	if got := (&sizeResult{commands: []*cmdResult{result(byID(t, "kubectl"), 1, 1)}}).bestFloor(); got != nil {
		t.Errorf("best floor without floors: %v, want none", got)
	}
}

func TestGrowthLineAndProjection(t *testing.T) {
	ps := byID(t, "podsync")
	kj := byID(t, "kubectl-json")
	f1, f5 := byID(t, "floor-1000"), byID(t, "floor-5000")
	size := func(pods int, rows ...*cmdResult) *sizeResult { return &sizeResult{pods: pods, commands: rows} }
	r := &report{cfg: &config{}, sizes: []*sizeResult{
		size(5000, result(ps, 165, 1), result(kj, 994, 6), result(f1, 50, 0.4), result(f5, 60, 0.5)),
		size(50000, result(ps, 1290, 9), result(kj, 7793, 76), result(f1, 50, 5), result(f5, 61, 4)),
		size(150000, result(ps, 3900, 30), &cmdResult{cmd: kj, skipped: "does not fit: estimated 23.0 GiB of 14.0 GiB available"}, result(f1, 52, 11.5), result(f5, 128, 6.7)),
	}}
	var b strings.Builder
	r.writeScaling(&b)
	out := b.String()
	containsAll(t, "growth section", out,
		"| command | 5000 pods | 50000 pods | 150000 pods | MiB per 1,000 pods | fixed MiB | projected at 150000 from the smaller sizes | measured |",
		// podsync: 25 MiB per 1,000 pods + 40 through 5k and 50k: 3790 at
		// 150k, 3900 measured (+3%); through all three 25.8 + 21.
		"| `kubectl podsync -A --once` | 165 | 1290 | 3900 | 25.8 | 21 | 3790 | 3900 (+3%) |",
		"| `kubectl get pods -A -o json` | 994 | 7793 | does not fit | 151.1 | 239 | — | — |",
		"| floor (the fastest variant at each size) | 50 (LIST, pages of 1,000) | 61 (LIST, pages of 5,000) | 128 (LIST, pages of 5,000) |",
		"Growth targets: `kubectl podsync -A --once` grows 25.8 MiB per 1,000 pods (target ≤ 6: **missed**).",
	)
	if _, _, ok := projection([]point{{5000, 1}, {50000, 2}}, 50000); ok {
		t.Error("projection from one smaller size: want none")
	}
}

func TestTargets(t *testing.T) {
	withRows := func(c *cmdResult, first float64) *cmdResult {
		for i := range c.samples {
			c.samples[i].firstRow = time.Duration(first * float64(time.Second))
		}
		return c
	}
	served := func(id string, run int, addedMiB int64) apiMemory {
		return apiMemory{cmd: byID(t, id), run: run, idle: 500 << 20, peak: (500 + addedMiB) << 20}
	}
	s := &sizeResult{pods: 50000, commands: []*cmdResult{
		result(byID(t, "floor-1000"), 50, 4),
		withRows(result(byID(t, "podsync"), 290, 4.8), 0.9),
		withRows(result(byID(t, "kubectl"), 3339, 25), 20),
		result(byID(t, "podsync-json"), 600, 6),
	}, apiMemory: []apiMemory{
		served("kubectl", 1, 300), served("podsync", 1, 40), served("podsync-json", 1, 310),
		// The medians decide: podsync's worst run is above kubectl's median.
		served("kubectl", 2, 280), served("podsync", 2, 350), served("podsync-json", 2, 250),
		served("kubectl", 3, 500), served("podsync", 3, 60), served("podsync-json", 3, 320),
		served("floor-1000", 1, 90), served("floor-1000", 2, 70), served("floor-1000", 3, 80),
	}, churn: []*churnResult{
		{Watcher: watcher{id: "podsync"}, Rate: 250, Achieved: 250, Lines: 5000, CPU: 400 * time.Millisecond, P99: 54 * time.Millisecond, Max: 600 * time.Millisecond},
		{Watcher: watcher{id: "kubectl"}, Rate: 250, Achieved: 250, Lines: 5000, CPU: 2 * time.Second, Lost: 3},
		{Watcher: watcher{id: "floor"}, Rate: 250, Lines: 0, NotRun: "failed: boom"},
		{Watcher: watcher{id: "floor"}, Rate: 250, Achieved: 250, Lines: 5000, CPU: 350 * time.Millisecond, P99: 40 * time.Millisecond},
	}, verdicts: []*verdictResult{
		{cs: verdictCases[0], latencies: []time.Duration{30 * time.Millisecond, 90 * time.Millisecond, 40 * time.Millisecond}},
		{cs: verdictCases[1], latencies: []time.Duration{30 * time.Millisecond, 120 * time.Millisecond}},
		{cs: verdictCases[0], build: "OLD", latencies: []time.Duration{500 * time.Millisecond}},
		{cs: verdictCases[0], wait: true, latencies: []time.Duration{20 * time.Millisecond, 70 * time.Millisecond}},
	}}
	var b strings.Builder
	(&report{cfg: &config{}}).writeAPIMemory(&b, s)
	containsAll(t, "API server table", b.String(),
		"| `kubectl get pods -A` | 1 | 500 | 800 | 300 |",
		"| `kubectl podsync -A --once` | 1 | 500 | 540 | 40 |",
		"| `kubectl podsync -A --once` | 3 | 500 | 560 | 60 |",
	)
	b.Reset()
	(&report{cfg: &config{rates: []float64{250}}}).writeTargets(&b, s)
	containsAll(t, "targets", b.String(),
		"| `podsync -A --once` wall ≤ 1.25× the floor's | 1.20× (4.80 s against 4.00 s) | met |",
		"| `podsync -A --once` peak RSS ≤ 6 MiB per 1,000 pods | 5.8 (290 MiB) | met |",
		"| `podsync -A --once -o json` wall ≤ 1.40× the floor's | 1.50× (6.00 s against 4.00 s) | **missed** |",
		"| `podsync -A --once -o json` peak RSS ≤ 10 MiB per 1,000 pods | 12.0 (600 MiB) | **missed** |",
		"| time to the first SYNC row ≤ 1.5 s and ≤ kubectl's first row | 0.90 s (kubectl 20.00 s) | met |",
		// The medians decide: podsync's worst run is above the floor's.
		"| kube-apiserver memory added by `podsync -A --once` ≤ the floor's + 10 % (medians) | +60 (40–350) MiB (the floor +80 (70–90) MiB, limit 88; kubectl +300 (280–500) MiB) | met |",
		"| kube-apiserver memory added by `podsync -A --once -o json` ≤ the floor's + 10 % (medians) | +310 (250–320) MiB (the floor +80 (70–90) MiB, limit 88; kubectl +300 (280–500) MiB) | **missed** |",
		// The floor's watch that failed is passed over for the one measured.
		"| churn at 250/s: CPU per update ≤ 1.25× the floor's watch | 0.080 against 0.070 ms: 1.14× | met |",
		"| churn at 250/s: lag p99 ≤ the floor's watch p99 + 25 ms, nothing lost | p99 54 ms against 40 ms, lost 0 | met |",
		"| verdict latency at 250/s, the last pod turns Ready: p99 ≤ 100 ms | p99 90 ms (p50 40 ms, max 90 ms, 3 trials, 0 failed; the floor's p99 70 ms) | met |",
		"| verdict latency at 250/s, a container enters CrashLoopBackOff (`--log-lines 0`): p99 ≤ 100 ms | p99 120 ms (p50 120 ms, max 120 ms, 2 trials, 0 failed) | **missed** |",
	)
	if strings.Contains(b.String(), "500 ms") {
		t.Errorf("a -compare build's verdict latency is not a target of this tree:\n%s", b.String())
	}
	s.churn = s.churn[:3]
	b.Reset()
	(&report{cfg: &config{rates: []float64{250}}}).writeTargets(&b, s)
	containsAll(t, "targets without the floor's watch", b.String(),
		"| churn at 250/s against the floor's watch | the floor's watch was not measured (-churn-peers) | — |")
	if n := (&report{sizes: []*sizeResult{s}}).lost(); n != 0 {
		t.Errorf("lost() = %d: only podsync's losses fail the bench, not a peer's", n)
	}
	b.Reset()
	(&report{cfg: &config{}}).writeChurn(&b, s, s.churn[2])
	containsAll(t, "a peer that failed", b.String(), "at 250/s: not measured, failed: boom.")
}

// containsAll reports each of wants that text lacks.
func containsAll(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, text)
		}
	}
}

func TestVerifyOutput(t *testing.T) {
	run := func(lines, bytes int64, first, wall time.Duration, stderr string) sample {
		return sample{outLine: lines, outBytes: bytes, firstRow: first, wall: wall, stderr: stderr}
	}
	sec := time.Second
	for _, tc := range []struct {
		id   string
		s    sample
		want string // "" for no error
	}{
		{"podsync", run(301, 40000, sec/2, sec, ""), ""},
		{"podsync", run(300, 40000, sec/2, sec, ""), "podsync printed 300 lines, want 301 for 300 pods"},
		{"podsync", run(301, 40000, -1, sec, ""), "podsync: first row at -1ns of a 1s run"},
		{"podsync-json", run(300, 900000, sec/2, sec, ""), ""},
		{"kubectl-json", run(9000, 2700000, -1, sec, ""), ""},
		{"kubectl-json", run(3, 100, 0, sec, ""), "kubectl-json printed 100 bytes for 300 pods"},
		{"floor-all", run(0, 0, -1, sec, "W0101 a warning\npods: 300\n"), ""},
		{"floor-all", run(0, 0, -1, sec, "pods: 299\n"), `floor-all said "pods: 299", want pods: 300`},
	} {
		err := verifyOutput(byID(t, tc.id), 300, tc.s)
		if got := fmt.Sprint(err); (err == nil) != (tc.want == "") || (err != nil && got != tc.want) {
			t.Errorf("%s %+v: error %v, want %q", tc.id, tc.s, err, tc.want)
		}
	}
}

func TestAPIMemoryServesTheFloorOfTheSize(t *testing.T) {
	floor := result(byID(t, "floor-watchlist"), 35, 3)
	for id, want := range map[string]bool{"kubectl": true, "podsync": true, "podsync-json": true, "floor-watchlist": true, "floor-500": false, "podsync-bin": false} {
		if got := servesAPIMemory(byID(t, id), floor); got != want {
			t.Errorf("%s: measured on a restarted API server %v, want %v", id, got, want)
		}
	}
	if servesAPIMemory(byID(t, "floor-watchlist"), nil) {
		t.Error("a floor measured without a floor of the size")
	}
}
