package podsync

import (
	"fmt"
	"strings"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// maxProgressPods is how many pods a progress line names.
const maxProgressPods = 3

// maxProgressLen bounds a progress line, in runes: each of its parts is
// cut like any line of cluster text, and a check over many contexts has
// many parts. A custom resource with a thousand conditions must not
// make every progress line a megabyte of log.
const maxProgressLen = 2000

// progress times the line a quiet check writes (--progress-interval): one
// line each time the check has printed nothing for the interval. A nil
// progress never fires.
type progress struct {
	interval time.Duration
	start    time.Time
	last     time.Time // the last message printed, or the last line
	timer    *time.Timer
	now      func() time.Time
}

// newProgress returns the progress of a check, nil for a plain stream or
// a zero interval.
func newProgress(cfg Config) *progress {
	if cfg.ProgressInterval <= 0 || len(cfg.Check.Conditions) == 0 || cfg.Once {
		return nil
	}
	now := time.Now()
	return &progress{interval: cfg.ProgressInterval, start: now, last: now, timer: time.NewTimer(cfg.ProgressInterval), now: time.Now}
}

// due fires when the interval may have passed; nil never fires.
func (p *progress) due() <-chan time.Time {
	if p == nil {
		return nil
	}
	return p.timer.C
}

// printed notes that a message was printed.
func (p *progress) printed() {
	if p != nil {
		p.last = p.now()
	}
}

// quietFor reports whether the interval has passed since the last output,
// and sets the timer for when it will next.
func (p *progress) quietFor() (time.Duration, bool) {
	now := p.now()
	since := now.Sub(p.last)
	if since < p.interval {
		p.timer.Reset(p.interval - since)
		return 0, false
	}
	p.last = now
	p.timer.Reset(p.interval)
	return now.Sub(p.start), true
}

// sayProgress writes what a quiet check waits on, when it has been quiet
// for the interval:
//
//	podsync: waiting 1m30s: 1 of 3 matching pods do not satisfy ready; web-7f9c-x2 ContainerCreating (unchanged for 45s)
func (s *stream) sayProgress() {
	waited, quiet := s.progress.quietFor()
	if !quiet {
		return
	}
	var parts []string
	if !s.stableSince.IsZero() {
		parts = append(parts, fmt.Sprintf("met, stable for %s of %s", waitedText(time.Since(s.stableSince)), s.cfg.Check.StableFor))
	}
	for _, w := range s.clusters {
		if !s.stableSince.IsZero() {
			break
		}
		text := w.eval.Reason(w.eval.Verdict())
		if lost := w.lost(); lost != "" {
			text = lost + "; before: " + text
		}
		if s.several {
			text = w.name + ": " + text
		}
		parts = append(parts, text)
		parts = append(parts, s.blockers(w)...)
	}
	for i := range parts {
		parts[i] = text.OneLine(parts[i], text.MaxLineLen)
	}
	fmt.Fprintf(s.stderr, "podsync: waiting %s: %s\n", waitedText(waited), text.SafeLine(strings.Join(parts, "; "), maxProgressLen))
}

// waitedText is a wait in whole seconds ("1m30s"), below a second in
// milliseconds.
func waitedText(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Truncate(time.Second).String()
}

// blockers names the first unsatisfied pods with their STATUS and how
// long they have shown it.
func (s *stream) blockers(w *clusterRun) []string {
	var out []string
	for _, k := range w.eval.UnsatisfiedKeys() {
		if len(out) == maxProgressPods {
			break
		}
		obj, ok, err := w.ctrl.Indexer().GetByKey(k)
		if err != nil || !ok {
			continue
		}
		row := obj.(*wire.PodRow)
		status := wire.Cell(row, "Status")
		if status == "" {
			status = check.Status(row.Pod())
		}
		name := row.Meta().Name
		if s.cfg.Scope.AllNamespaces {
			name = k
		}
		text := name + " " + status
		if at, ok := w.changed[k]; ok {
			text += " (unchanged for " + waitedText(s.progress.now().Sub(at)) + ")"
		}
		out = append(out, text)
	}
	return out
}
