package check

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// podStep is one message of a random history: after a pause, the pod is
// ready, crash-looping or running unready, with its restart count.
type podStep struct {
	pause    time.Duration
	kind     int // stepReady, stepCrash, stepUnready
	restarts int32
}

const (
	stepReady = iota
	stepCrash
	stepUnready
)

func (s podStep) pod() *corev1.Pod {
	switch s.kind {
	case stepReady:
		return newPod("p", ready(), running("app", s.restarts))
	case stepCrash:
		return newPod("p", phase(corev1.PodRunning), crashing(s.restarts))
	}
	return newPod("p", phase(corev1.PodRunning), runningUnready(s.restarts))
}

// randomHistory is a pod's history: a crash always adds a restart, a ready
// pod sometimes comes back restarted.
func randomHistory(r *rand.Rand) []podStep {
	var out []podStep
	var restarts int32
	for range 1 + r.IntN(12) {
		s := podStep{pause: time.Duration(r.IntN(8000)) * time.Millisecond, kind: r.IntN(3)}
		if s.kind == stepCrash || s.kind == stepReady && r.IntN(5) == 0 {
			restarts++
		}
		s.restarts = restarts
		out = append(out, s)
	}
	return out
}

// timerModel is what --fail-after and --stable-for should do with a
// history, worked out apart from the Evaluator.
type timerModel struct {
	failAfter, stableFor time.Duration
	badSince, windowAt   time.Duration // -1: not holding, not open
	restarts             int32
	ended                bool
	state                State
	at                   time.Duration
	reason               string
}

// due is the model's next timer: the --fail-after hold running out, or
// the window ending.
func (m *timerModel) due() (time.Duration, bool) {
	switch {
	case m.badSince >= 0 && m.failAfter > 0:
		return m.badSince + m.failAfter, true
	case m.windowAt >= 0:
		return m.windowAt + m.stableFor, true
	}
	return 0, false
}

func (m *timerModel) fire(now time.Duration) {
	m.ended, m.at = true, now
	if m.badSince >= 0 {
		m.state, m.reason = Failed, "CrashLoopBackOff"
		return
	}
	m.state = Met
}

func (m *timerModel) end(now time.Duration, st State, reason string) {
	m.ended, m.at, m.state, m.reason = true, now, st, reason
}

func (m *timerModel) step(now time.Duration, s podStep) {
	restarted := s.restarts > m.restarts
	m.restarts = s.restarts
	if m.windowAt >= 0 {
		switch {
		case restarted:
			m.end(now, Failed, ReasonRestarted)
		case s.kind != stepReady:
			m.end(now, Failed, ReasonUnstable)
		}
		return
	}
	switch s.kind {
	case stepReady:
		m.badSince = -1
		if m.stableFor > 0 {
			m.windowAt = now
			return
		}
		m.end(now, Met, "")
	case stepCrash:
		if m.failAfter == 0 {
			m.end(now, Failed, "CrashLoopBackOff")
		} else if m.badSince < 0 {
			m.badSince = now
		}
	}
}

// TestTimersModel plays random pod histories against a fake clock with
// random --fail-after and --stable-for, firing each timer when it is due
// as the run does, and holds the Evaluator to the model: the same verdict
// at the same moment for the same reason.
func TestTimersModel(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 7))
	durations := []time.Duration{0, 3 * time.Second, 10 * time.Second, 30 * time.Second}
	seen := map[string]int{}
	for i := range 3000 {
		failAfter, stableFor := durations[r.IntN(4)], durations[r.IntN(4)]
		history := randomHistory(r)
		name := fmt.Sprintf("history %d (--fail-after %s, --stable-for %s): %+v", i, failAfter, stableFor, history)
		spec := untilSpec("ready")
		spec.FailAfter, spec.StableFor = failAfter, stableFor
		if err := spec.Validate(); err != nil {
			t.Fatal(err)
		}
		e := NewEvaluator(spec)
		c := newClock()
		e.SetClock(c.now)
		start := c.t
		m := &timerModel{failAfter: failAfter, stableFor: stableFor, badSince: -1, windowAt: -1}

		got, at := playHistory(e, c, history, m)
		if got.State != m.state || at.Sub(start) != m.at {
			t.Fatalf("%s\nevaluator: %s at %s; model: %s at %s (%s)", name, got, at.Sub(start), m.state, m.at, m.reason)
		}
		if got.State == Failed && got.Failure.Reason != m.reason {
			t.Fatalf("%s\nfailed for %s (%s), model says %s", name, got.Failure.Reason, got.Failure, m.reason)
		}
		seen[fmt.Sprintf("%s %s held=%v window=%v", m.state, m.reason, m.badSince >= 0 && failAfter > 0, m.windowAt >= 0)]++
	}
	// Every way a run can end was played, so the model cannot pass on
	// histories that never reach a timer.
	for _, want := range []string{"met  held=false window=false", "met  held=false window=true",
		"failed CrashLoopBackOff held=false window=false", "failed CrashLoopBackOff held=true window=false",
		"failed Restarted held=false window=true", "failed Unstable held=false window=true", "pending  held=false window=false"} {
		if seen[want] == 0 {
			t.Errorf("no history ended %q; seen %v", want, seen)
		}
	}
}

// playHistory runs history through e as the stream would, firing the
// timers e and the window ask for in between, and steps the model
// alongside; it returns the verdict the run ends with and when.
func playHistory(e *Evaluator, c *fakeClock, history []podStep, m *timerModel) (Result, time.Time) {
	start := c.t
	var windowAt time.Time
	now := time.Duration(0)
	for i, s := range history {
		next := now + s.pause
		if due, ok := m.due(); ok && due <= next {
			// The run's timers: --fail-after's expiry, the window's end.
			c.t = start.Add(due)
			m.fire(due)
			e.Expire()
			return e.Verdict(), c.t
		}
		now = next
		c.t = start.Add(now)
		e.Observe("k", s.pod(), i == 0)
		e.Unsteady()
		m.step(now, s)
		v := e.Verdict()
		if v.State == Failed {
			return v, c.t
		}
		if v.State == Met {
			if e.spec.StableFor <= 0 {
				return v, c.t
			}
			if windowAt.IsZero() {
				windowAt = c.t
				e.StartWindow(e.spec.StableFor)
			}
		}
		if m.ended {
			return v, c.t
		}
	}
	// The history ran out: the next timer, if any, ends the run.
	if due, ok := m.due(); ok {
		c.t = start.Add(due)
		m.fire(due)
		e.Expire()
		return e.Verdict(), c.t
	}
	m.end(now, Pending, "")
	return e.Verdict(), c.t
}
