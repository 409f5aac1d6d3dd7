// Package check judges the CI checks of --until on the stream of pod
// messages: it parses --until and --fail-on, evaluates each message as it
// comes (Evaluator), explains the pods that are not satisfied and fills the
// summary that ends a check (Summary). It prints nothing: package output
// writes the summary.
package check

import (
	"errors"
	"fmt"
	"time"
)

// Unset is the value of Spec.MinPods and Spec.MaxRestarts when the flag
// was not given.
const Unset = -1

// Spec is what a CI check asks for. The zero value is not valid: use
// Unset for flags that were not given.
type Spec struct {
	// Conditions from --until; empty means no --until.
	Conditions []Condition
	// MinPods from --min-pods, or Unset for the default: 1, or 0 for gone.
	MinPods int
	// FailOn holds the --fail-on reasons; empty turns that check off.
	FailOn []string
	// MaxRestarts from --max-restarts, or Unset to turn the check off.
	MaxRestarts int
	// FailAfter from --fail-after: how long a failure reason must hold
	// before it fails the check; 0 fails at once.
	FailAfter time.Duration
	// StableFor from --stable-for: how long the check keeps judging once
	// it is met; 0 ends it when met.
	StableFor time.Duration
	// ProbeBudget from --probe-budget: how long a container may run
	// unready while its readiness or startup probe fails; ProbeAuto works
	// it out from each container's probes, 0 turns the rule off.
	ProbeBudget time.Duration
}

// Flags are the raw values of the check flags, as the command read them.
// The *Set fields tell a flag given as "" apart from one not given.
type Flags struct {
	Until       string
	UntilSet    bool
	FailOn      string
	FailOnSet   bool
	MinPods     int
	MaxRestarts int
	FailAfter   time.Duration
	StableFor   time.Duration
	// ProbeBudget is --probe-budget as given ("" is auto).
	ProbeBudget string
}

// Spec parses and validates the flags into a Spec. Without --fail-on,
// the default reasons apply when --until is given, and none otherwise.
func (f Flags) Spec() (Spec, error) {
	s := Spec{MinPods: f.MinPods, MaxRestarts: f.MaxRestarts, FailAfter: f.FailAfter, StableFor: f.StableFor}
	if f.UntilSet || f.Until != "" {
		conds, err := ParseConditions(f.Until)
		if err != nil {
			return Spec{}, err
		}
		s.Conditions = conds
	}
	switch {
	case f.FailOnSet || f.FailOn != "":
		reasons, err := ParseReasons(f.FailOn)
		if err != nil {
			return Spec{}, err
		}
		s.FailOn = reasons
	case len(s.Conditions) > 0:
		s.FailOn = DefaultFailOn()
	}
	if len(s.Conditions) > 0 || f.ProbeBudget != "" {
		d, err := ParseProbeBudget(f.ProbeBudget)
		if err != nil {
			return Spec{}, err
		}
		s.ProbeBudget = d
	}
	if err := s.Validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// Validate checks the values and how they combine. --min-pods and
// --max-restarts are "with --until" in the contract, so they are usage
// errors without it; --fail-on alone is allowed (fail fast while watching).
func (s Spec) Validate() error {
	if s.MinPods < Unset {
		return fmt.Errorf("invalid --min-pods %d: must be 0 or more", s.MinPods)
	}
	if s.MaxRestarts < Unset {
		return fmt.Errorf("invalid --max-restarts %d: must be 0 or more", s.MaxRestarts)
	}
	if len(s.Conditions) == 0 && s.MinPods != Unset {
		return errors.New("--min-pods needs --until")
	}
	if len(s.Conditions) == 0 && s.MaxRestarts != Unset {
		return errors.New("--max-restarts needs --until")
	}
	if s.FailAfter < 0 {
		return fmt.Errorf("invalid --fail-after %s: must not be negative", s.FailAfter)
	}
	if s.FailAfter > 0 && len(s.FailOn) == 0 && s.MaxRestarts == Unset && !s.JudgesProbes() {
		return errors.New("--fail-after needs a --fail-on reason or --max-restarts to delay, or --until with a --probe-budget")
	}
	if err := s.validateProbeBudget(); err != nil {
		return err
	}
	if s.StableFor < 0 {
		return fmt.Errorf("invalid --stable-for %s: must not be negative", s.StableFor)
	}
	if s.StableFor > 0 && len(s.Conditions) == 0 {
		return errors.New("--stable-for needs --until")
	}
	if hasGone(s.Conditions) && s.MinPods > 0 {
		return fmt.Errorf("--min-pods %d cannot be used with --until gone, which waits for 0 pods", s.MinPods)
	}
	return s.validateLists()
}

// validateLists re-checks lists built in Go rather than parsed, so a
// caller's mistake is a usage error and not a check that can never end.
func (s Spec) validateLists() error {
	if len(s.Conditions) > 0 {
		if _, err := ParseConditions(FormatConditions(s.Conditions)); err != nil {
			return err
		}
	}
	if len(s.FailOn) > 0 {
		if _, err := ParseReasons(FormatReasons(s.FailOn)); err != nil {
			return err
		}
	}
	return nil
}

// Gone says the check waits for things to go (--until gone).
func (s Spec) Gone() bool { return hasGone(s.Conditions) }

// Judges reports whether a run of the spec judges its pods: conditions,
// --fail-on or --max-restarts. Only such a run has a verdict.
func (s Spec) Judges() bool {
	return len(s.Conditions) > 0 || len(s.FailOn) > 0 || s.MaxRestarts != Unset
}

// RequiredPods is how many pods must match for the conditions to be met.
func (s Spec) RequiredPods() int {
	if s.MinPods != Unset {
		return s.MinPods
	}
	if hasGone(s.Conditions) {
		return 0
	}
	return 1
}
