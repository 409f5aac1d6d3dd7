package check

import (
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
)

// ReasonUnhealthy is the reason of a container whose readiness or startup
// probe kept failing past its budget: the kubelet's Event reason.
const ReasonUnhealthy = "Unhealthy"

// ProbeAuto is Spec.ProbeBudget when each container's budget comes from
// its own probes (see ProbeBudgetOf); 0 turns the rule off.
const ProbeAuto time.Duration = -1

// The Kubernetes defaults of a probe's fields, for a probe that does not
// set them (the API server sets them on a pod it stores).
const (
	defaultPeriod    = 10
	defaultThreshold = 3
	defaultTimeout   = 1
)

// maxProbeBudget bounds a budget worked out from absurd settings, so the
// sum cannot overflow.
const maxProbeBudget = 365 * 24 * time.Hour

// Bounds of the wait between two looks for the kubelet's probe Events of a
// pod past its budget: about a probe period.
const (
	minProbeLook = 2 * time.Second
	maxProbeLook = 30 * time.Second
)

// ParseProbeBudget parses --probe-budget: "auto" (or "") for ProbeAuto,
// "never" or 0 for off, else a positive duration for every container.
func ParseProbeBudget(s string) (time.Duration, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return ProbeAuto, nil
	case "never", "0":
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("invalid --probe-budget %q: want auto, never or a duration like 90s", s)
	case d < 0:
		return 0, fmt.Errorf("invalid --probe-budget %s: must not be negative", d)
	}
	return d, nil
}

// FormatProbeBudget is the --probe-budget value of d.
func FormatProbeBudget(d time.Duration) string {
	switch d {
	case ProbeAuto:
		return "auto"
	case 0:
		return "never"
	}
	return d.String()
}

// ProbeBudgetOf is how long the container may run unready while its
// startup and readiness probes fail before the gate gives up on it: for
// each probe, startup first, initialDelaySeconds + periodSeconds ×
// failureThreshold, the time the kubelet takes to give up on it; then a
// margin of one period and timeoutSeconds of the last probe, since the
// first probe can come up to a period after the delay and the last one
// answers only after its timeout. False: no readiness or startup probe.
func ProbeBudgetOf(c *corev1.Container) (time.Duration, bool) {
	var secs int64
	var last *corev1.Probe
	for _, p := range []*corev1.Probe{c.StartupProbe, c.ReadinessProbe} {
		if p == nil {
			continue
		}
		secs += int64(max(p.InitialDelaySeconds, 0)) + orDefault(p.PeriodSeconds, defaultPeriod)*orDefault(p.FailureThreshold, defaultThreshold)
		last = p
	}
	if last == nil {
		return 0, false
	}
	secs += orDefault(last.PeriodSeconds, defaultPeriod) + orDefault(last.TimeoutSeconds, defaultTimeout)
	return min(time.Duration(secs)*time.Second, maxProbeBudget), true
}

func orDefault(v, def int32) int64 {
	if v <= 0 {
		return int64(def)
	}
	return int64(v)
}

// probeWatch is a container that runs unready with a probe: past due, the
// kubelet's Events are looked up for a failing probe; found is the
// failure they showed.
type probeWatch struct {
	container string
	started   time.Time
	budget    time.Duration
	due       time.Time
	every     time.Duration
	asked     bool
	found     *Failure
}

// ProbeAsk asks the caller to look up the pod's Events for the kubelet's
// word that the container's readiness or startup probe fails (see
// ProbeMessage), and to answer with ProbeAnswer.
type ProbeAsk struct {
	Key       string
	UID       types.UID
	Container string
	// Since is when the container started: older Events are about an
	// instance that is gone.
	Since time.Time
}

// probeFailure keeps the watch of the pod's first container that runs
// unready with a probe, and returns the failing probe its Events showed,
// if any. A container that turns ready, restarts or stops running ends its
// watch.
func (e *Evaluator) probeFailure(key string, pod *corev1.Pod, st *podState) *Failure {
	w := e.unreadyProbe(pod)
	if w == nil {
		e.endProbe(key, st)
		return nil
	}
	if old := st.probe; old != nil && old.container == w.container && old.started.Equal(w.started) {
		w = old
	}
	st.probe = w
	e.probing[key] = st
	if w.found == nil {
		return nil
	}
	f := *w.found
	return &f
}

// unreadyProbe finds the container of a Running pod that runs unready
// with a readiness or startup probe, the one whose budget ends first.
func (e *Evaluator) unreadyProbe(pod *corev1.Pod) *probeWatch {
	if !e.spec.JudgesProbes() || pod.Status.Phase != corev1.PodRunning {
		return nil
	}
	var first *probeWatch
	for i := range pod.Status.ContainerStatuses {
		cs := &pod.Status.ContainerStatuses[i]
		if cs.Ready || cs.State.Running == nil {
			continue
		}
		w := e.watchOf(pod, cs)
		if w != nil && (first == nil || w.due.Before(first.due)) {
			first = w
		}
	}
	return first
}

func (e *Evaluator) watchOf(pod *corev1.Pod, cs *corev1.ContainerStatus) *probeWatch {
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if c.Name != cs.Name {
			continue
		}
		budget, ok := ProbeBudgetOf(c)
		if !ok {
			return nil
		}
		if e.spec.ProbeBudget > 0 {
			budget = e.spec.ProbeBudget
		}
		started := cs.State.Running.StartedAt.Time
		return &probeWatch{container: c.Name, started: started, budget: budget, due: started.Add(budget), every: lookEvery(c)}
	}
	return nil
}

// lookEvery is how often the Events of a container past its budget are
// looked up: once a period of its probe, within bounds.
func lookEvery(c *corev1.Container) time.Duration {
	p := c.ReadinessProbe
	if p == nil {
		p = c.StartupProbe
	}
	d := time.Duration(orDefault(p.PeriodSeconds, defaultPeriod)) * time.Second
	return min(max(d, minProbeLook), maxProbeLook)
}

// ProbesDue returns the containers past their budget whose Events are to
// be looked up now; each is asked once until ProbeAnswer. It costs
// O(pods running unready with a probe).
func (e *Evaluator) ProbesDue() []ProbeAsk {
	if e.failure != nil {
		return nil
	}
	now := e.now()
	var asks []ProbeAsk
	for key, st := range e.probing {
		w := st.probe
		if w.asked || w.found != nil || now.Before(w.due) {
			continue
		}
		w.asked = true
		asks = append(asks, ProbeAsk{Key: key, UID: st.uid, Container: w.container, Since: w.started})
	}
	return asks
}

// NextProbe is when the first container not asked about yet comes past
// its budget; false when there is none (or the check failed).
func (e *Evaluator) NextProbe() (time.Time, bool) {
	var next time.Time
	if e.failure != nil {
		return next, false
	}
	for _, st := range e.probing {
		w := st.probe
		if w.asked || w.found != nil {
			continue
		}
		if next.IsZero() || w.due.Before(next) {
			next = w.due
		}
	}
	return next, !next.IsZero()
}

// ProbeAnswer takes the answer to a ProbeAsk: message is the kubelet's
// newest word of the failing probe, "" when there is none yet (the
// Events are looked up again a probe period later), and err a lookup that
// failed (looked up again the same way). An answer about a container that
// has since turned ready or restarted is dropped. A failing probe is a
// failure as a --fail-on reason is: at once, or held for --fail-after.
func (e *Evaluator) ProbeAnswer(a ProbeAsk, message string, err error) {
	st := e.pods[a.Key]
	if st == nil || st.uid != a.UID || st.probe == nil || st.probe.container != a.Container || !st.probe.started.Equal(a.Since) {
		return
	}
	w := st.probe
	w.asked = false
	if message == "" || err != nil {
		w.due = e.now().Add(w.every)
		return
	}
	w.found = &Failure{Key: a.Key, Reason: ReasonUnhealthy, Container: a.Container, Message: message, Budget: w.budget}
	if e.failure == nil {
		f := *w.found
		e.hold(a.Key, st, &f)
	}
}

// ProbeMessage finds, among a pod's Events, the kubelet's newest word that
// the container's readiness or startup probe fails (a Warning, reason
// Unhealthy, "Readiness probe failed: …"), seen since the container
// started. Liveness failures restart the container, which other rules
// judge.
func ProbeMessage(events []corev1.Event, container string, since time.Time) (string, bool) {
	var msg string
	var newest time.Time
	for i := range events {
		ev := &events[i]
		if ev.Type != corev1.EventTypeWarning || ev.Reason != ReasonUnhealthy || !isProbeWord(ev.Message) {
			continue
		}
		if p := ev.InvolvedObject.FieldPath; p != "" && p != "spec.containers{"+container+"}" {
			continue
		}
		// Event times are whole seconds, and so is a container's start.
		at := eventTime(ev)
		if at.Add(time.Second).Before(since) || msg != "" && !at.After(newest) {
			continue
		}
		msg, newest = ev.Message, at
	}
	return msg, msg != ""
}

func isProbeWord(msg string) bool {
	return strings.HasPrefix(msg, "Readiness probe ") || strings.HasPrefix(msg, "Startup probe ")
}

// probeString describes a failing probe in one line.
func (f Failure) probeString() string {
	s := fmt.Sprintf("pod %s: container %q is still not ready past its probe budget of %s%s", f.Key, f.Container, f.Budget, f.heldText())
	if f.Message != "" {
		s += ": " + text.OneLine(f.Message, maxTextLen)
	}
	return s
}

// JudgesProbes reports whether the check fails a container whose
// readiness or startup probe fails past its budget.
func (s Spec) JudgesProbes() bool { return s.ProbeBudget != 0 && len(s.Conditions) > 0 }

// endProbe stops watching the pod's probes: it is no longer judged.
func (e *Evaluator) endProbe(key string, st *podState) {
	st.probe = nil
	delete(e.probing, key)
}

// validateProbeBudget checks --probe-budget against the other flags.
func (s Spec) validateProbeBudget() error {
	if s.ProbeBudget < ProbeAuto {
		return fmt.Errorf("invalid --probe-budget %s: must not be negative", s.ProbeBudget)
	}
	if s.ProbeBudget > 0 && len(s.Conditions) == 0 {
		return errors.New("--probe-budget needs --until")
	}
	return nil
}
