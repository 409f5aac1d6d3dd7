package check

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func probe(delay, period, threshold, timeout int32) *corev1.Probe {
	return &corev1.Probe{InitialDelaySeconds: delay, PeriodSeconds: period, FailureThreshold: threshold, TimeoutSeconds: timeout}
}

func TestProbeBudgetOf(t *testing.T) {
	for _, tc := range []struct {
		name             string
		startup, readies *corev1.Probe
		want             time.Duration
		ok               bool
	}{
		{name: "no probe"},
		{name: "readiness 1s x 3", readies: probe(0, 1, 3, 1), want: 3*time.Second + 2*time.Second, ok: true},
		{name: "defaults", readies: probe(0, 0, 0, 0), want: 30*time.Second + 11*time.Second, ok: true},
		{name: "delay", readies: probe(5, 2, 4, 1), want: 13*time.Second + 3*time.Second, ok: true},
		{name: "startup first", startup: probe(0, 10, 30, 1), readies: probe(5, 1, 3, 2),
			want: 300*time.Second + 8*time.Second + 3*time.Second, ok: true},
		{name: "startup alone", startup: probe(0, 5, 6, 1), want: 30*time.Second + 6*time.Second, ok: true},
		{name: "absurd", readies: probe(0, 1<<30, 1<<30, 1), want: maxProbeBudget, ok: true},
	} {
		c := &corev1.Container{Name: "app", StartupProbe: tc.startup, ReadinessProbe: tc.readies}
		got, ok := ProbeBudgetOf(c)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: ProbeBudgetOf = %s, %v; want %s, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseProbeBudget(t *testing.T) {
	for in, want := range map[string]time.Duration{"": ProbeAuto, "auto": ProbeAuto, "never": 0, "0": 0, "0s": 0, "90s": 90 * time.Second} {
		got, err := ParseProbeBudget(in)
		if err != nil || got != want {
			t.Errorf("ParseProbeBudget(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"soon", "-1s", "5"} {
		if _, err := ParseProbeBudget(in); err == nil {
			t.Errorf("ParseProbeBudget(%q) = nil error", in)
		}
	}
	if _, err := (Flags{MinPods: Unset, MaxRestarts: Unset, ProbeBudget: "30s"}).Spec(); err == nil || !strings.Contains(err.Error(), "--probe-budget needs --until") {
		t.Errorf("--probe-budget 30s without --until: %v", err)
	}
}

// withProbe gives the app container a readiness probe.
func withProbe(p *corev1.Probe) podOpt {
	return func(pod *corev1.Pod) { pod.Spec.Containers[0].ReadinessProbe = p }
}

// unreadySince makes the app container run unready since started.
func unreadySince(started time.Time) podOpt {
	return status(corev1.ContainerStatus{Name: "app",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}})
}

func probeEval(failAfter time.Duration, budget string) (*Evaluator, *fakeClock) {
	spec, err := Flags{Until: "ready", UntilSet: true, MinPods: Unset, MaxRestarts: Unset, FailAfter: failAfter, ProbeBudget: budget}.Spec()
	if err != nil {
		panic(err)
	}
	e := NewEvaluator(spec)
	c := newClock()
	e.SetClock(c.now)
	return e, c
}

func TestProbeFailsPastItsBudget(t *testing.T) {
	e, c := probeEval(0, "")
	start := c.t
	pod := newPod("p", phase(corev1.PodRunning), withProbe(probe(0, 1, 3, 1)), unreadySince(start))
	e.Observe("k", pod, false)
	at, ok := e.NextProbe()
	if !ok || !at.Equal(start.Add(5*time.Second)) {
		t.Fatalf("NextProbe = %v, %v; want start + 5s", at, ok)
	}
	c.add(4 * time.Second)
	if asks := e.ProbesDue(); len(asks) != 0 {
		t.Fatalf("asked before the budget: %+v", asks)
	}
	c.add(time.Second)
	asks := e.ProbesDue()
	if len(asks) != 1 || asks[0].Container != "app" || !asks[0].Since.Equal(start) {
		t.Fatalf("ProbesDue = %+v, want app since start", asks)
	}
	if again := e.ProbesDue(); len(again) != 0 {
		t.Fatalf("asked twice: %+v", again)
	}
	// No Unhealthy Event yet: looked up again a period later (at least 2s).
	e.ProbeAnswer(asks[0], "", nil)
	if at, _ := e.NextProbe(); !at.Equal(c.t.Add(minProbeLook)) {
		t.Fatalf("next look at %v, want now + %s", at, minProbeLook)
	}
	if e.Verdict().State != Pending {
		t.Fatal("failed without the kubelet's word")
	}
	c.add(minProbeLook)
	asks = e.ProbesDue()
	e.ProbeAnswer(asks[0], "Readiness probe failed: HTTP probe failed with statuscode: 503", nil)
	v := e.Verdict()
	want := `pod k: container "app" is still not ready past its probe budget of 5s: Readiness probe failed: HTTP probe failed with statuscode: 503`
	if v.State != Failed || v.Failure.String() != want || v.Failure.Reason != ReasonUnhealthy {
		t.Fatalf("verdict %s (%q), want %q", v.State, v.Failure.String(), want)
	}
}

func TestProbeReadyInsideTheBudget(t *testing.T) {
	e, c := probeEval(0, "")
	e.Observe("k", newPod("p", phase(corev1.PodRunning), withProbe(probe(0, 1, 3, 1)), unreadySince(c.t)), false)
	c.add(3 * time.Second)
	e.Observe("k", newPod("p", withProbe(probe(0, 1, 3, 1)), ready()), false)
	if _, ok := e.NextProbe(); ok {
		t.Fatal("a ready pod is still watched")
	}
	if v := e.Verdict(); v.State != Met {
		t.Fatalf("verdict %s, want met", v)
	}
}

func TestProbeStaleAnswerAndOverrides(t *testing.T) {
	e, c := probeEval(0, "")
	start := c.t
	e.Observe("k", newPod("p", phase(corev1.PodRunning), withProbe(probe(0, 1, 3, 1)), unreadySince(start)), false)
	c.add(10 * time.Second)
	asks := e.ProbesDue()
	// The container restarted meanwhile: the answer is about the old one.
	e.Observe("k", newPod("p", phase(corev1.PodRunning), withProbe(probe(0, 1, 3, 1)), unreadySince(c.t)), false)
	e.ProbeAnswer(asks[0], "Readiness probe failed: old", nil)
	if v := e.Verdict(); v.State != Pending {
		t.Fatalf("a stale answer failed the check: %s", v)
	}

	// Without probes nothing is watched; --probe-budget never turns it off;
	// a duration replaces the worked-out budget.
	e, c = probeEval(0, "")
	e.Observe("k", newPod("p", phase(corev1.PodRunning), unreadySince(c.t)), false)
	if _, ok := e.NextProbe(); ok {
		t.Fatal("a container without probes is watched")
	}
	e, c = probeEval(0, "never")
	e.Observe("k", newPod("p", phase(corev1.PodRunning), withProbe(probe(0, 1, 3, 1)), unreadySince(c.t)), false)
	if _, ok := e.NextProbe(); ok {
		t.Fatal("--probe-budget never still watches")
	}
	e, c = probeEval(0, "1m")
	e.Observe("k", newPod("p", phase(corev1.PodRunning), withProbe(probe(0, 1, 3, 1)), unreadySince(c.t)), false)
	if at, _ := e.NextProbe(); !at.Equal(c.t.Add(time.Minute)) {
		t.Fatalf("--probe-budget 1m: due %v", at)
	}
}

func TestProbeWithFailAfter(t *testing.T) {
	e, c := probeEval(10*time.Second, "")
	e.Observe("k", newPod("p", phase(corev1.PodRunning), withProbe(probe(0, 1, 3, 1)), unreadySince(c.t)), false)
	c.add(5 * time.Second)
	e.ProbeAnswer(e.ProbesDue()[0], "Readiness probe failed: no", nil)
	if v := e.Verdict(); v.State != Pending {
		t.Fatalf("--fail-after 10s: failed at once: %s", v)
	}
	c.add(10 * time.Second)
	e.Expire()
	v := e.Verdict()
	if v.State != Failed || !strings.Contains(v.Failure.String(), "probe budget of 5s for 10s, more than --fail-after 10s") {
		t.Fatalf("after 10s more: %s", v)
	}
}

func TestProbeMessage(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	ev := func(typ, reason, msg, path string, at time.Time) corev1.Event {
		return corev1.Event{Type: typ, Reason: reason, Message: msg, LastTimestamp: metav1.NewTime(at),
			InvolvedObject: corev1.ObjectReference{FieldPath: path}}
	}
	events := []corev1.Event{
		ev("Warning", "Unhealthy", "Readiness probe failed: before the start", "spec.containers{app}", start.Add(-time.Minute)),
		ev("Warning", "Unhealthy", "Liveness probe failed: not this", "spec.containers{app}", start.Add(3*time.Second)),
		ev("Warning", "Unhealthy", "Readiness probe failed: other container", "spec.containers{side}", start.Add(3*time.Second)),
		ev("Normal", "Started", "Started container app", "spec.containers{app}", start),
		ev("Warning", "Unhealthy", "Readiness probe failed: older", "spec.containers{app}", start.Add(2*time.Second)),
		ev("Warning", "Unhealthy", "Startup probe failed: newest", "", start.Add(4*time.Second)),
	}
	if got, ok := ProbeMessage(events, "app", start); !ok || got != "Startup probe failed: newest" {
		t.Errorf("ProbeMessage = %q, %v", got, ok)
	}
	if got, ok := ProbeMessage(events[:4], "app", start); ok {
		t.Errorf("ProbeMessage found %q among no probe failures of app since the start", got)
	}
}

// TestProbeModel plays random histories against a fake clock: a pod whose
// probed container runs unready from start fails exactly when its budget
// is spent and the kubelet has reported a failing probe by then, unless
// it turned ready first.
func TestProbeModel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 45))
	for i := range 2000 {
		p := probe(r.Int32N(5), 1+r.Int32N(5), 1+r.Int32N(5), 1+r.Int32N(3))
		budget, _ := ProbeBudgetOf(&corev1.Container{ReadinessProbe: p})
		readyAt := time.Duration(r.Int64N(int64(2 * budget)))
		reported := r.IntN(4) != 0
		e, c := probeEval(0, "")
		start := c.t
		e.Observe("k", newPod("p", phase(corev1.PodRunning), withProbe(p), unreadySince(start)), false)
		ended := false
		for step := time.Duration(0); step < 3*budget && !ended; step += 500 * time.Millisecond {
			c.t = start.Add(step)
			if step >= readyAt {
				e.Observe("k", newPod("p", withProbe(p), ready()), false)
				ended = true
			}
			for _, a := range e.ProbesDue() {
				if step < budget {
					t.Fatalf("history %d: asked at %s, before the budget %s", i, step, budget)
				}
				msg := ""
				if reported {
					msg = "Readiness probe failed: no"
				}
				e.ProbeAnswer(a, msg, nil)
			}
			if e.Verdict().State == Failed {
				ended = true
			}
		}
		v := e.Verdict()
		wantFailed := reported && readyAt >= budget
		if got := v.State == Failed; got != wantFailed {
			t.Fatalf("history %d (probe %+v, budget %s, ready at %s, reported %v): %s", i, p, budget, readyAt, reported, v)
		}
		if wantFailed && v.Failure.Budget != budget {
			t.Fatalf("history %d: failure budget %s, want %s", i, v.Failure.Budget, budget)
		}
	}
}
