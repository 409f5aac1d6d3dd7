package main

import (
	"math"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestFitPoints(t *testing.T) {
	// 20 MiB fixed, 25 MiB per 1,000 pods, exactly.
	line := []point{{5000, 145}, {20000, 520}, {50000, 1270}}
	slope, icept, ok := fitPoints(line)
	if !ok || !near(slope*1000, 25) || !near(icept, 20) {
		t.Errorf("fit of an exact line: %.4f MiB per 1,000 pods, %.4f fixed, ok %v; want 25, 20, true", slope*1000, icept, ok)
	}
	// Noisy points: the least-squares line of (1,1), (2,3), (3,2) is
	// y = 0.5x + 1.
	slope, icept, ok = fitPoints([]point{{1, 1}, {2, 3}, {3, 2}})
	if !ok || !near(slope, 0.5) || !near(icept, 1) {
		t.Errorf("fit of (1,1) (2,3) (3,2): slope %g, intercept %g; want 0.5, 1", slope, icept)
	}
	for _, ps := range [][]point{nil, {{5000, 100}}, {{5000, 100}, {5000, 120}}} {
		if _, _, ok := fitPoints(ps); ok {
			t.Errorf("fit of %v: ok, want no line", ps)
		}
	}
}

func TestEstimatePeak(t *testing.T) {
	for _, tc := range []struct {
		name    string
		history []point
		pods    int
		want    float64
		basis   string
	}{
		{"no size yet: the command's default", nil, 150000, 40 + 25*150, "default 40 MiB + 25.0 MiB per 1,000 pods"},
		{"one size: in proportion", []point{{50000, 1200}}, 150000, 3600, "1200 MiB at 50000 pods, in proportion"},
		{"two sizes: along their line", []point{{5000, 145}, {50000, 1270}}, 150000, 20 + 25*150, "the line through 2 smaller sizes, 25.0 MiB per 1,000 pods"},
		// A flat floor measured a little lower at the larger size: never
		// below what was already measured.
		{"a falling line: the largest peak", []point{{5000, 52}, {50000, 49}}, 150000, 52, "the line through 2 smaller sizes"},
	} {
		got := estimatePeak(tc.history, tc.pods, 25, 40)
		if !near(got.mib, tc.want) || !strings.HasPrefix(got.basis, tc.basis) {
			t.Errorf("%s: %.1f MiB (%s), want %.1f MiB (%s)", tc.name, got.mib, got.basis, tc.want, tc.basis)
		}
	}
}

func TestFits(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		mib   float64
		avail int64
		want  bool
	}{
		{1024, 3 * gib, true},        // 1.1 GiB + 1 GiB reserve in 3 GiB
		{10240, 12 * gib, true},      // 11 GiB + 1 in 12
		{10240, 11 * gib, false},     // the margin does not fit
		{150 * 160, 14 * gib, false}, // kubectl -o json at 150,000 pods
		{0, guardReserve - 1, false}, // not even the reserve
		{0, guardReserve, true},      // exactly the reserve
		{900, int64(900*1.1*(1<<20)) + guardReserve, true},
	} {
		if got := fits(tc.mib, tc.avail); got != tc.want {
			t.Errorf("fits(%.0f MiB, %.2f GiB) = %v, want %v", tc.mib, float64(tc.avail)/gib, got, tc.want)
		}
	}
}

// The guard decides from the sizes measured before, and says why.
func TestWontFit(t *testing.T) {
	kubectl := command{id: "kubectl", label: "`kubectl get pods -A`", perK: 70, fixed: 40}
	size := func(pods int, rss float64) *sizeResult {
		return &sizeResult{pods: pods, commands: []*cmdResult{{cmd: kubectl, samples: []sample{{maxRSS: int64(rss * (1 << 20))}}}}}
	}
	e := &env{cfg: &config{guard: true}, done: []*sizeResult{size(5000, 370), size(50000, 3339)}}
	avail, err := availableMemory()
	if err != nil {
		t.Skipf("no /proc/meminfo here: %v", err)
	}
	if got := e.wontFit(kubectl, 5000); got != "" {
		t.Errorf("kubectl at 5,000 pods, measured there at 370 MiB, with %.1f GiB available: %q, want it to fit", float64(avail)/(1<<30), got)
	}
	// 66 MiB per 1,000 pods: 10,000 times the pods cannot fit anywhere.
	got := e.wontFit(kubectl, 500_000_000)
	if !strings.HasPrefix(got, "does not fit: estimated ") || !strings.Contains(got, " GiB available (the line through 2 smaller sizes, 66.0 MiB per 1,000 pods)") {
		t.Errorf("kubectl at 500,000,000 pods: %q, want does not fit, with the estimate from the line", got)
	}
	e.cfg.guard = false
	if got := e.wontFit(kubectl, 500_000_000); got != "" {
		t.Errorf("-guard=false: %q, want no guard", got)
	}
}

func TestMemBudgetCapsTheMemoryAvailable(t *testing.T) {
	if _, err := availableMemory(); err != nil {
		t.Skipf("no /proc/meminfo here: %v", err)
	}
	c := command{id: "kubectl-json", perK: 160, fixed: 600}
	e := &env{cfg: &config{guard: true, memBudget: 1500 << 20}}
	// 600 + 160 × 0.3 = 648 MiB, × 1.1 + 1 GiB reserve: 1737 MiB > 1500.
	if got := e.wontFit(c, 300); got != "does not fit: estimated 0.6 GiB of 1.5 GiB available (default 600 MiB + 160.0 MiB per 1,000 pods)" {
		t.Errorf("kubectl -o json at 300 pods in 1500 MiB: %q", got)
	}
	e.cfg.memBudget = 1800 << 20
	if got := e.wontFit(c, 300); got != "" {
		t.Errorf("kubectl -o json at 300 pods in 1800 MiB: %q, want it to fit", got)
	}
}

// The output check runs kubectl even when -only leaves it out of the
// measurements: the guard decides whether it fits, as it does for a
// measured command, and a measured command's own skip is passed on.
func TestCheckAsksTheGuardForUnmeasuredPeers(t *testing.T) {
	if _, err := availableMemory(); err != nil {
		t.Skipf("no /proc/meminfo here: %v", err)
	}
	e := &env{cfg: &config{guard: true, memBudget: 1500 << 20}}
	measured := []*cmdResult{{cmd: byID(t, "podsync-json")}}
	want := "`kubectl get pods -A -o json` does not fit: estimated 0.6 GiB of 1.5 GiB available (default 600 MiB + 160.0 MiB per 1,000 pods)"
	if got := e.uncheckable(300, measured, "podsync-json", "kubectl-json"); got != want {
		t.Errorf("kubectl -o json, not measured, at 300 pods in 1500 MiB: %q, want %q", got, want)
	}
	e.cfg.memBudget = 1800 << 20
	if got := e.uncheckable(300, measured, "podsync-json", "kubectl-json"); got != "" {
		t.Errorf("at 300 pods in 1800 MiB: %q, want the check to run", got)
	}
	skipped := []*cmdResult{{cmd: byID(t, "kubectl"), skipped: "does not fit: x"}}
	if got := e.uncheckable(300, skipped, "podsync", "kubectl"); got != "`kubectl get pods -A` does not fit: x" {
		t.Errorf("a measured command's skip: %q", got)
	}
}
