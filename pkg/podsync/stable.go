package podsync

import "time"

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
