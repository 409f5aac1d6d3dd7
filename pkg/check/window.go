package check

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Reasons of the failures --stable-for finds in its window.
const (
	// ReasonRestarted: a container restarted after the check was met.
	ReasonRestarted = "Restarted"
	// ReasonUnstable: the check stopped being met (a pod turned unready,
	// a target went back to progressing).
	ReasonUnstable = "Unstable"
)

// StartWindow opens the --stable-for window: the check is met, and from
// now on, for d, any restart or any pod or target that stops satisfying
// it fails the check (see Unsteady).
func (e *Evaluator) StartWindow(d time.Duration) {
	e.windowAt, e.windowFor = e.now(), d
}

// InWindow reports whether the --stable-for window is open.
func (e *Evaluator) InWindow() bool { return !e.windowAt.IsZero() }

// Unsteady fails a check whose window is open and that is no longer met,
// naming the first pod that misses a condition, else what holds it back.
func (e *Evaluator) Unsteady() {
	if !e.InWindow() || e.failure != nil {
		return
	}
	v := e.Verdict()
	if v.State != Pending {
		return
	}
	f := &Failure{Reason: ReasonUnstable, Message: e.Reason(v)}
	if keys := e.UnsatisfiedKeys(); len(keys) > 0 {
		f.Key = keys[0]
	}
	e.windowFailure(f)
}

// watchWindow fails the check when, in the window, the pod of key
// restarted (its counts grew past before) or stopped satisfying the
// conditions.
func (e *Evaluator) watchWindow(key string, pod *corev1.Pod, st *podState, before map[string]int32, known bool) {
	if e.spec.StableFor <= 0 {
		return
	}
	after := restartCounts(pod)
	st.counts = after
	if !e.InWindow() || e.failure != nil || st.leaving || st.left || pod.DeletionTimestamp != nil {
		return
	}
	for name, n := range after {
		if known && n > before[name] {
			e.windowFailure(&Failure{Key: key, Reason: ReasonRestarted, Container: name,
				Message: fmt.Sprintf("restarts %d -> %d", before[name], n)})
			return
		}
	}
	if !st.satisfied && !st.finished {
		e.windowFailure(&Failure{Key: key, Reason: ReasonUnstable,
			Message: fmt.Sprintf("%s no longer satisfies %s", Status(pod), e.until)})
	}
}

func (e *Evaluator) windowFailure(f *Failure) {
	f.Into, f.StableFor = e.now().Sub(e.windowAt), e.windowFor
	e.failure = f
}

// windowString describes a failure found in the --stable-for window.
func (f Failure) windowString() string {
	when := fmt.Sprintf("%s into --stable-for %s", roundHeld(f.Into), f.StableFor)
	switch {
	case f.Reason == ReasonRestarted:
		return fmt.Sprintf("pod %s: container %q restarted %s (%s)", f.Key, f.Container, when, f.Message)
	case f.Key != "":
		return fmt.Sprintf("pod %s: %s, %s", f.Key, f.Message, when)
	}
	return fmt.Sprintf("the check was met, then %s: %s", when, f.Message)
}
