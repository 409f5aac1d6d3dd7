package check

import (
	"fmt"
	"math"
	"time"
)

// What became of a --stable-for window, in Stability.Outcome.
const (
	// WindowHeld: the check stayed met for the whole window.
	WindowHeld = "held"
	// WindowBroken: something in the window failed the check.
	WindowBroken = "broken"
	// WindowCutShort: the run ended (--timeout, a signal) before the
	// window was over.
	WindowCutShort = "cut short"
	// WindowNotOpened: the check was never met, so no window opened.
	WindowNotOpened = "not opened"
)

// Stability is the summary's account of the --stable-for window: how long
// it was asked for, how long it ran, and, when it broke, what broke it.
type Stability struct {
	ForSeconds  float64 `json:"stableForSeconds"`
	Outcome     string  `json:"outcome"`
	HeldSeconds float64 `json:"heldSeconds"`
	// Reason is the failure's reason when broken: Restarted, Unstable, or
	// a --fail-on reason.
	Reason    string `json:"reason,omitempty"`
	Pod       string `json:"pod,omitempty"` // namespace/name
	Container string `json:"container,omitempty"`
	Message   string `json:"message,omitempty"`
}

// NewStability describes a window of d that ran for held and ended with
// outcome.
func NewStability(d, held time.Duration, outcome string) *Stability {
	return &Stability{ForSeconds: seconds(d), HeldSeconds: seconds(held), Outcome: outcome}
}

// BrokenBy marks the window broken by f, held into it.
func (s *Stability) BrokenBy(f Failure, held time.Duration) {
	s.Outcome, s.HeldSeconds = WindowBroken, seconds(held)
	s.Reason, s.Pod, s.Container, s.Message = f.Reason, f.Key, f.Container, f.Message
}

// String is the summary's line about the window:
//
//	held for 30s
//	broken 10s into 30s: pod shop/web-1: container "app" restarted (restarts 0 -> 1)
func (s *Stability) String() string {
	d := time.Duration(s.ForSeconds * float64(time.Second))
	held := roundHeld(time.Duration(s.HeldSeconds * float64(time.Second)))
	switch s.Outcome {
	case WindowHeld:
		return fmt.Sprintf("held for %s", d)
	case WindowCutShort:
		return fmt.Sprintf("cut short %s into %s: the run ended first", held, d)
	case WindowNotOpened:
		return fmt.Sprintf("%s not opened: the check was never met", d)
	}
	return fmt.Sprintf("broken %s into %s: %s", held, d, s.brokenBy())
}

// brokenBy names what broke the window, in the words of the failure's line.
func (s *Stability) brokenBy() string {
	what := s.Message
	switch {
	case s.Reason == ReasonRestarted:
		what = fmt.Sprintf("container %q restarted (%s)", s.Container, s.Message)
	case s.Reason == ReasonUnstable:
	case s.Container != "":
		what = fmt.Sprintf("container %q is %s: %s", s.Container, s.Reason, s.Message)
	default:
		what = s.Reason + ": " + s.Message
	}
	if s.Pod != "" {
		what = "pod " + s.Pod + ": " + what
	}
	return what
}

func seconds(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }
