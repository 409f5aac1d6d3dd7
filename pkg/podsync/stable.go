package podsync

import (
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// stableOver reports whether a met check may end: at once without
// --stable-for; with it, once the window it opens here has run its length
// with the check met all along (--once judges one state: no window).
func (s *stream) stableOver() bool {
	d := s.cfg.Check.StableFor
	if d <= 0 || s.cfg.Once {
		return true
	}
	if s.stableSince.IsZero() {
		s.stableSince = time.Now()
		for _, w := range s.clusters {
			w.eval.StartWindow(d)
		}
		s.stable = time.NewTimer(d)
		return false
	}
	return time.Since(s.stableSince) >= d
}

// stableDue is the channel of the --stable-for timer, nil when none is set.
func (s *stream) stableDue() <-chan time.Time {
	if s.stable == nil {
		return nil
	}
	return s.stable.C
}

// stableShort reports whether the --stable-for window is open and has not
// run its length: a check that ends then (--timeout) is not met.
func (s *stream) stableShort() bool {
	return !s.stableSince.IsZero() && time.Since(s.stableSince) < s.cfg.Check.StableFor
}

// stability is the summary's account of the --stable-for window of a run
// that ended with out; nil without the flag or with --once.
func (s *stream) stability(out Outcome) *check.Stability {
	d := s.cfg.Check.StableFor
	if d <= 0 || s.cfg.Once {
		return nil
	}
	if s.stableSince.IsZero() {
		return check.NewStability(d, 0, check.WindowNotOpened)
	}
	held := time.Since(s.stableSince)
	for _, w := range s.clusters {
		if v := w.eval.Verdict(); v.State == check.Failed {
			st := check.NewStability(d, 0, check.WindowBroken)
			if v.Failure.StableFor > 0 {
				held = v.Failure.Into
			}
			st.BrokenBy(v.Failure, held)
			return st
		}
	}
	if out.Verdict == Met {
		return check.NewStability(d, d, check.WindowHeld)
	}
	return check.NewStability(d, held, check.WindowCutShort)
}
