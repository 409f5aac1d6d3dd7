package check

import (
	"fmt"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
)

// maxTextLen bounds one message in a one-line reason; termination
// messages can be kilobytes long. The summary's fields keep them whole.
const maxTextLen = text.MaxLineLen

// Summary is what a check found when it ended; package output writes it
// as text, JSON, Markdown and GitHub annotations. The caller
// fills it: Pods and Statuses from the Evaluator, Events from its own
// counters, and Unsatisfied only when the check failed (exit 3 or 4).
type Summary struct {
	Verdict  string
	ExitCode int
	Duration time.Duration
	Pods     int
	Statuses map[string]int // pods per STATUS column
	Events   map[string]int // messages per message type
	// EventTypes are the types always shown, in this order, even at zero.
	EventTypes []string
	Reason     string // one line: why the check ended this way
	// Targets has one entry per workload target (TYPE/NAME, -f).
	Targets []TargetSummary
	// LeftBehind lists the pods in phase Failed that their controller
	// replaces: matched, but not judged (see LeftBehindOf).
	LeftBehind  []LeftBehindPod
	Unsatisfied []PodExplanation
	// Omitted counts unsatisfied pods left out of Unsatisfied, so a
	// caller can cap the explanations for huge selections.
	Omitted int
	// Contexts has a line per context of a check over several; the
	// fields above are then their total.
	Contexts []ContextSummary
	// Stability is what became of the --stable-for window; nil without
	// the flag.
	Stability *Stability
}

// SchedulingReason puts first, in a not-met check's one-line reason, a
// pod the scheduler cannot place: the scheduler's message says what to
// fix, where "do not satisfy ready" only says what is missing.
func (s *Summary) SchedulingReason() {
	for _, p := range s.Unsatisfied {
		if p.Unschedulable == "" {
			continue
		}
		lead := fmt.Sprintf("pod %s cannot be scheduled: %s", p.QualifiedName(), text.OneLine(p.Unschedulable, maxTextLen))
		if s.Reason != "" {
			lead += "; " + s.Reason
		}
		s.Reason = lead
		return
	}
}

// RoundDuration keeps a tenth of a second (milliseconds below one
// second): enough for people, and stable in tests.
func RoundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}
