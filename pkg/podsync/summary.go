package podsync

import (
	"context"
	"maps"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/controller"
)

// summary writes the summary of a run that ended with out: the verdict, how
// long it took, the pods by STATUS, the count of each message kind, and,
// for a check that failed or was not met, an explanation of each pod that
// is not satisfied.
func (s *stream) summary(ctx context.Context, out Outcome, took time.Duration) {
	sum := check.Summary{
		Verdict: out.Verdict.String(), ExitCode: out.ExitCode(), Duration: took,
		Statuses: map[string]int{}, Events: map[string]int{}, EventKinds: kindNames(s.cfg),
	}
	for _, w := range s.clusters {
		v := w.eval.Verdict()
		sum.Pods += v.Pods
		mergeCounts(sum.Statuses, w.eval.Statuses())
		mergeCounts(sum.Events, w.events)
		if sum.Reason == "" || v.State == check.Failed {
			sum.Reason = w.eval.Reason(v)
		}
		if out.Verdict == NotMet || out.Verdict == Failed {
			xs, omitted := s.explain(ctx, w)
			sum.Unsatisfied, sum.Omitted = append(sum.Unsatisfied, xs...), sum.Omitted+omitted
		}
	}
	if out.Verdict == Interrupted {
		sum.Reason = SignalError{Signal: out.Signal}.Error()
	}
	s.writeSummary(sum)
	if s.cfg.JSONSummary {
		_ = sum.WriteJSON(s.stderr)
	}
}

func mergeCounts(into, from map[string]int) {
	for k, v := range maps.All(from) {
		into[k] += v
	}
}

// kindNames lists the message kinds the summary always counts, in the
// kinds table's order: the pod kinds, then those the run prints
// (DIAGNOSIS with --diagnose, WARNING and NORMAL with --events).
func kindNames(cfg Config) []string {
	var out []string
	for _, k := range controller.Kinds() {
		switch {
		case k.PodState(),
			k == controller.Diagnosis && cfg.Diagnose,
			(k == controller.Warning || k == controller.Normal) && cfg.Events:
			out = append(out, k.String())
		}
	}
	return out
}
