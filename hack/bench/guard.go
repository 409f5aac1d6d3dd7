package main

import (
	"fmt"
	"math"
)

// point is one command's median peak RSS (MiB) at one pod count.
type point struct {
	pods int
	mib  float64
}

// estimate is a command's expected peak RSS at a size, and how the bench
// came to it.
type estimate struct {
	mib   float64
	basis string
}

// estimatePeak projects a command's peak RSS at pods from what it took at
// the smaller sizes of this run: along their least-squares line when there
// are two or more, in proportion to the one size otherwise (a fixed part
// makes that an overestimate), and from the command's own default of
// fixed MiB plus perK MiB per 1,000 pods when there is none yet. Memory
// does not shrink as pods are added, so no estimate is below the largest
// peak measured.
func estimatePeak(history []point, pods int, perK, fixed float64) estimate {
	if len(history) == 0 {
		return estimate{mib: fixed + perK*float64(pods)/1000,
			basis: fmt.Sprintf("default %.0f MiB + %.1f MiB per 1,000 pods", fixed, perK)}
	}
	largest := 0.0
	for _, p := range history {
		largest = max(largest, p.mib)
	}
	if len(history) == 1 {
		p := history[0]
		return estimate{mib: max(largest, p.mib*float64(pods)/float64(p.pods)),
			basis: fmt.Sprintf("%.0f MiB at %d pods, in proportion", p.mib, p.pods)}
	}
	slope, icept, ok := fitPoints(history)
	if !ok {
		return estimate{mib: largest, basis: "the largest peak measured"}
	}
	return estimate{mib: max(largest, icept+slope*float64(pods)),
		basis: fmt.Sprintf("the line through %d smaller sizes, %.1f MiB per 1,000 pods", len(history), slope*1000)}
}

// Room the guard leaves: the estimate can be a little short, and the API
// server grows while it serves the client.
const (
	guardMargin  = 1.1
	guardReserve = 1 << 30 // bytes
)

// fits says whether a client with a peak of mib MiB can run when avail
// bytes are available.
func fits(mib float64, avail int64) bool {
	return mib*guardMargin*(1<<20)+guardReserve <= float64(avail)
}

// wontFit says why c cannot run at pods on this machine now, or "".
func (e *env) wontFit(c command, pods int) string {
	if !e.cfg.guard {
		return ""
	}
	est := estimatePeak(e.history(c.id), pods, c.perK, c.fixed)
	avail, err := availableMemory()
	if err != nil {
		return ""
	}
	if e.cfg.memBudget > 0 {
		avail = min(avail, e.cfg.memBudget)
	}
	if fits(est.mib, avail) {
		return ""
	}
	return fmt.Sprintf("does not fit: estimated %.1f GiB of %.1f GiB available (%s)",
		est.mib/1024, float64(avail)/(1<<30), est.basis)
}

// history is what a command took at the sizes measured so far.
func (e *env) history(id string) []point {
	var out []point
	for _, s := range e.done {
		if c := s.find(id); c != nil && c.measured() {
			out = append(out, point{pods: s.pods, mib: c.rss().median})
		}
	}
	return out
}

// fitPoints is the least-squares line through points: MiB per pod and MiB
// at no pods. ok is false for fewer than two distinct pod counts.
func fitPoints(ps []point) (slope, intercept float64, ok bool) {
	if len(ps) < 2 {
		return 0, 0, false
	}
	n := float64(len(ps))
	var sx, sy, sxx, sxy float64
	for _, p := range ps {
		x := float64(p.pods)
		sx, sy, sxx, sxy = sx+x, sy+p.mib, sxx+x*x, sxy+x*p.mib
	}
	d := n*sxx - sx*sx
	if math.Abs(d) < 1e-9 {
		return 0, 0, false
	}
	slope = (n*sxy - sx*sy) / d
	return slope, (sy - slope*sx) / n, true
}
