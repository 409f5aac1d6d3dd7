package podsync

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// A run over several clusters (kubeconfig contexts) runs one controller
// per cluster and merges their messages in the order they come; each
// cluster's check is judged alone and the run's verdict combines them
// (stream.state). What is said about one cluster names it.

// contextError names the cluster an error is about, when a run has several.
type contextError struct {
	name string
	err  error
}

func (e *contextError) Error() string { return "context " + e.name + ": " + e.err.Error() }
func (e *contextError) Unwrap() error { return e.err }

// prefix starts a line said about w: "context NAME: " with several
// clusters, nothing with one.
func (w *clusterRun) prefix() string {
	if w.label == "" {
		return ""
	}
	// A kubeconfig, possibly shared, names the contexts: its names are
	// text from elsewhere like the cluster's.
	return "context " + text.SafeLine(w.label, 0) + ": "
}

// unavailable is a cluster that could not be used at start, skipped by
// --skip-unavailable.
type unavailable struct {
	cluster int
	err     error
}

// skipper returns what w's connection calls instead of ending the run when
// w cannot be used at start: w's controller stops and the stream hears of
// it.
func (s *stream) skipper(ctx context.Context, w *clusterRun) func(error) {
	return func(why error) {
		w.stop(why)
		select {
		case s.unavailable <- unavailable{cluster: w.index, err: why}:
		case <-ctx.Done():
		}
	}
}

// skip goes on without a cluster, saying so once. With none left, there is
// nothing to watch: the run ends as one whose cluster cannot be used.
func (s *stream) skip(u unavailable) (ending, bool) {
	w := s.clusters[u.cluster]
	w.unavailable, w.list.done, w.list.held = u.err, true, nil
	fmt.Fprintf(s.stderr, "warning: %sunavailable, going on without it (--skip-unavailable): %s\n", w.prefix(), text.OneLine(u.err.Error(), 0))
	if s.skipped() < len(s.clusters) {
		return ending{}, false
	}
	var errs []error
	for _, w := range s.clusters {
		errs = append(errs, &contextError{name: w.name, err: w.unavailable})
	}
	return ending{verdict: Broken, cause: fmt.Errorf("no context can be used: %w", errors.Join(errs...))}, true
}

// skipped counts the clusters skipped as unavailable.
func (s *stream) skipped() int {
	n := 0
	for _, w := range s.clusters {
		if w.unavailable != nil {
			n++
		}
	}
	return n
}

// contextSummary is w's line in the summary of a run over several
// clusters: its own verdict, pods and reason.
func (s *stream) contextSummary(w *clusterRun) check.ContextSummary {
	v := w.eval.Verdict()
	c := check.ContextSummary{Name: w.name, Pods: v.Pods, Reason: w.eval.Reason(v)}
	switch {
	case w.unavailable != nil:
		c.Verdict, c.Reason = Failed.String(), "unavailable: "+text.OneLine(w.unavailable.Error(), 0)
	case v.State != check.Failed && w.lost() != "":
		c.Verdict, c.Reason = NotMet.String(), w.lost()
		if !s.cfg.Check.Judges() {
			c.Verdict = Done.String()
		}
	case !w.list.done && v.State != check.Failed:
		// The run ended (another cluster failed, a signal) before this
		// cluster's list was in: what it has is no verdict yet.
		c.Verdict, c.Reason = NotMet.String(), "the initial list of pods was not complete yet"
		if !s.cfg.Check.Judges() {
			c.Verdict = Done.String()
		}
	case v.State == check.Failed:
		c.Verdict = Failed.String()
	case v.State == check.Met:
		c.Verdict = Met.String()
	case len(s.cfg.Check.Conditions) > 0:
		c.Verdict = NotMet.String()
	default:
		c.Verdict = Done.String()
	}
	return c
}

// reason is the summary's one-line reason for the whole run. With several
// clusters it is the reason of the cluster that decided it, named: a failed
// one, else a skipped one, else one not met; when every one is met, it
// says so.
func (s *stream) reason() string {
	if !s.several {
		for _, w := range s.clusters {
			// The same words as a context's: a list cut short says so.
			return s.contextSummary(w).Reason
		}
		return ""
	}
	best, rank := "", -1
	for _, w := range s.clusters {
		c := s.contextSummary(w)
		r := 0
		switch {
		case w.eval.Verdict().State == check.Failed:
			r = 3
		case w.unavailable != nil:
			r = 2
		case c.Verdict != Met.String():
			r = 1
		}
		if r > rank {
			best, rank = w.prefix()+c.Reason, r
		}
	}
	if rank == 0 {
		return fmt.Sprintf("met in all %d contexts", len(s.clusters))
	}
	return best
}

// lost says since when w's connection is lost ("disconnected since
// 16:02:11, 9s ago"), "" while it is up.
func (w *clusterRun) lost() string {
	at, lost := w.conn.lostSince()
	if !lost {
		return ""
	}
	return fmt.Sprintf("disconnected since %s, %s ago", at.Format("15:04:05"), check.RoundDuration(time.Since(at)))
}
