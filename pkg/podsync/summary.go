package podsync

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
)

// summary writes the summary of a run that ended with out: the verdict, how
// long it took, the pods by STATUS, the count of each message type, and,
// for a check that failed or was not met, an explanation of each pod that
// is not satisfied.
func (s *stream) summary(ctx context.Context, out Outcome, took time.Duration) {
	sum := check.Summary{
		Verdict: out.Verdict.String(), ExitCode: out.ExitCode(), Duration: took,
		Statuses: map[string]int{}, Events: map[string]int{}, EventTypes: typeNames(s.cfg),
	}
	sum.Reason = s.reason()
	sum.Stability = s.stability(out)
	gone := slices.ContainsFunc(s.cfg.Check.Conditions, func(c check.Condition) bool { return c.Keyword == check.KeywordGone })
	for _, w := range s.clusters {
		sum.Targets = append(sum.Targets, w.targets.summarize(w, gone)...)
		sum.Pods += w.eval.Verdict().Pods
		for _, lb := range w.eval.LeftBehind() {
			lb.Context = w.label
			sum.LeftBehind = append(sum.LeftBehind, lb)
		}
		mergeCounts(sum.Statuses, w.eval.Statuses())
		mergeCounts(sum.Events, w.events)
		if s.several {
			sum.Contexts = append(sum.Contexts, s.contextSummary(w))
		}
	}
	if out.Verdict == NotMet || out.Verdict == Failed {
		sum.Unsatisfied, sum.Omitted = s.explainAll(ctx)
	}
	if out.Verdict == NotMet {
		sum.SchedulingReason()
	}
	if out.Verdict == Interrupted {
		sum.Reason = SignalError{Signal: out.Signal}.Error()
	}
	s.writeSummary(sum)
	if s.cfg.JSONSummary {
		s.writeJSONSummary(sum)
	}
}

func mergeCounts(into, from map[string]int) {
	for k, v := range maps.All(from) {
		into[k] += v
	}
}

// typeNames lists the message types the summary always counts, in the
// order of message.Types: the pod types, then those the run prints
// (DIAGNOSIS with --diagnose, WARNING and NORMAL with --events).
func typeNames(cfg Config) []string {
	var out []string
	for _, k := range message.Types() {
		switch {
		case k.PodState(),
			k == message.Diagnosis && cfg.Diagnose,
			(k == message.Warning || k == message.Normal) && cfg.Events:
			out = append(out, k.String())
		}
	}
	return out
}
