package check

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/podview"
)

// SetClock sets the clock that --fail-after reads (time.Now by default),
// so tests can play time.
func (e *Evaluator) SetClock(now func() time.Time) { e.now = now }

// holdFailure records the failure f that the pod of key shows now (nil:
// none). Without --fail-after it fails the check at once. With it, the
// failure fails the check only once the pod has shown a failure for
// FailAfter without recovering; Expire judges again when that time comes
// and no message does.
//
// A pod recovers when it shows no failure and is Ready (or Succeeded): a
// crash-looping container that runs unready between two back-offs has
// not recovered. A pod that stops being judged (deleted, replaced by its
// workload's rollout, left behind) has no failure to hold either. A
// Failed phase is final, so it holds until the pod goes; restarts over
// --max-restarts hold until the pod is Ready again.
func (e *Evaluator) holdFailure(key string, pod *corev1.Pod, st *podState, f *Failure) {
	if e.spec.FailAfter <= 0 {
		e.failure = f
		return
	}
	if f != nil && f.Reason == ReasonTooManyRestarts && podview.Healthy(pod) {
		// Back and Ready: the restarts that were too many have stopped.
		f = nil
	}
	if f == nil && (!e.judged(key, pod) || podview.Healthy(pod)) {
		st.failing, st.since = nil, time.Time{}
		delete(e.failing, key)
		return
	}
	if f == nil {
		// Between two failures, unready: the clock goes on.
		if st.failing != nil {
			e.expire(key, st, e.now())
		}
		return
	}
	e.hold(key, st, f)
}

// hold records the failure f of the pod of key: at once without
// --fail-after, else from now on unless it was held already.
func (e *Evaluator) hold(key string, st *podState, f *Failure) {
	if e.spec.FailAfter <= 0 {
		e.failure = f
		return
	}
	now := e.now()
	if st.failing == nil {
		st.since = now
	}
	st.failing = f
	e.failing[key] = st
	e.expire(key, st, now)
}

// judged reports whether the pod is still one whose failures count: not
// being deleted, left behind, nor of a revision its workload replaces.
func (e *Evaluator) judged(key string, pod *corev1.Pod) bool {
	if _, left := LeftBehindOf(pod); left || pod.DeletionTimestamp != nil {
		return false
	}
	return e.replaced == nil || !e.replaced(key, pod)
}

// expire fails the check with the pod's held failure once it has held for
// --fail-after at now.
func (e *Evaluator) expire(key string, st *podState, now time.Time) {
	if e.failure != nil || st.failing == nil {
		return
	}
	held := now.Sub(st.since)
	if held < e.spec.FailAfter {
		return
	}
	f := *st.failing
	f.Held, f.FailAfter = held, e.spec.FailAfter
	e.failure = &f
}

// Expire judges the failures --fail-after holds back against the clock:
// call it when NextExpiry comes. It costs O(pods failing now).
func (e *Evaluator) Expire() {
	now := e.now()
	for key, st := range e.failing {
		e.expire(key, st, now)
	}
}

// NextExpiry is when the first failure held back by --fail-after will have
// held long enough; false when there is none (or the check failed).
func (e *Evaluator) NextExpiry() (time.Time, bool) {
	var next time.Time
	if e.failure != nil {
		return next, false
	}
	for _, st := range e.failing {
		if at := st.since.Add(e.spec.FailAfter); next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next, !next.IsZero()
}
