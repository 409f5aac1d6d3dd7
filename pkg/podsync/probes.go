package podsync

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// probeLookTime bounds one look at a pod's Events for a failing probe.
const probeLookTime = 10 * time.Second

// probeAnswer is what one look at a pod's Events found for a
// check.ProbeAsk of clusters[cluster].
type probeAnswer struct {
	cluster int
	ask     check.ProbeAsk
	message string
	err     error
}

// alarm is a timer set for the earliest of a changing set of times.
type alarm struct {
	timer *time.Timer
	at    time.Time
}

// set moves the alarm to next (zero: none).
func (a *alarm) set(next time.Time) {
	switch {
	case next.Equal(a.at):
		return
	case a.timer == nil && !next.IsZero():
		a.timer = time.NewTimer(time.Until(next))
	case a.timer != nil:
		a.timer.Stop()
		if !next.IsZero() {
			a.timer.Reset(time.Until(next))
		}
	}
	a.at = next
}

// due is the alarm's channel, nil when it is not set.
func (a *alarm) due() <-chan time.Time {
	if a.timer == nil || a.at.IsZero() {
		return nil
	}
	return a.timer.C
}

// armProbes sets the alarm for the first container that comes past its
// probe budget: its Events are looked up then, even if no message comes.
func (s *stream) armProbes() {
	if !s.cfg.Check.JudgesProbes() {
		return
	}
	var next time.Time
	for _, w := range s.clusters {
		if at, ok := w.eval.NextProbe(); ok && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	s.probeAlarm.set(next)
}

// askProbes looks up, for each container past its probe budget, its pod's
// Events for the kubelet's word that the probe fails: a request per such
// pod and probe period, and none for pods without probes. Each look runs
// on its own and answers on s.probes.
func (s *stream) askProbes() {
	s.probeAlarm.at = time.Time{}
	for _, w := range s.clusters {
		for _, a := range w.eval.ProbesDue() {
			if w.diagnoser == nil {
				continue // no client to ask (a source given by a test)
			}
			go s.lookAtProbe(w, a)
		}
	}
}

func (s *stream) lookAtProbe(w *clusterRun, a check.ProbeAsk) {
	ans := probeAnswer{cluster: w.index, ask: a}
	name, err := cache.ParseObjectName(a.Key)
	if err == nil {
		ctx, cancel := context.WithTimeout(w.ctx, probeLookTime)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name, UID: a.UID}}
		var events []corev1.Event
		events, err = w.diagnoser.Events(ctx, pod)
		cancel()
		ans.message, _ = check.ProbeMessage(events, a.Container, a.Since)
	}
	ans.err = err
	select {
	case s.probes <- ans:
	case <-w.ctx.Done():
	}
}

// attachProbeLog adds, to the explanation of a pod that failed its probes,
// the failing container's log tail: it is running, so no diagnosis read
// it.
func (s *stream) attachProbeLog(ctx context.Context, w *clusterRun, key string, pod *corev1.Pod, x *check.PodExplanation) {
	f := w.eval.Verdict().Failure
	if w.diagnoser == nil || f.Key != key || f.Reason != check.ReasonUnhealthy || f.Budget == 0 {
		return
	}
	for i := range x.Containers {
		if c := &x.Containers[i]; c.Name == f.Container && c.Logs == nil {
			c.Logs = w.diagnoser.Tail(ctx, pod, c.Name)
		}
	}
}
