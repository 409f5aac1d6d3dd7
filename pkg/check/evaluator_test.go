package check

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// step is one call on an Evaluator followed by the state expected after it.
type step struct {
	key     string
	pod     *corev1.Pod // nil: Forget
	status  string
	initial bool
	want    State
}

func runSteps(t *testing.T, e *Evaluator, steps []step) {
	t.Helper()
	for i, s := range steps {
		if s.pod == nil {
			e.Forget(s.key)
		} else {
			e.ObserveStatus(s.key, s.pod, s.status, s.initial)
		}
		if got := e.Verdict(); got.State != s.want {
			t.Fatalf("step %d (%s): state = %v, want %v (%s)", i, s.key, got.State, s.want, got)
		}
	}
}

func TestEvaluatorConditions(t *testing.T) {
	tests := []struct {
		name  string
		spec  Spec
		steps []step
	}{
		{
			name: "ready once every pod is ready",
			spec: untilSpec("ready"),
			steps: []step{
				{key: "default/a", pod: newPod("a"), initial: true, want: Pending},
				{key: "default/b", pod: newPod("b", ready()), initial: true, want: Pending},
				{key: "default/a", pod: newPod("a", ready()), want: Met},
				{key: "default/a", pod: newPod("a", phase(corev1.PodRunning)), want: Pending},
			},
		},
		{
			name: "no pod is not met with the default min pods",
			spec: untilSpec("ready"),
			steps: []step{
				{key: "default/a", pod: newPod("a", ready()), initial: true, want: Met},
				{key: "default/a", want: Pending},
			},
		},
		{
			name: "min pods",
			spec: func() Spec { s := untilSpec("running"); s.MinPods = 3; return s }(),
			steps: []step{
				{key: "default/a", pod: newPod("a", phase(corev1.PodRunning)), initial: true, want: Pending},
				{key: "default/b", pod: newPod("b", phase(corev1.PodRunning)), initial: true, want: Pending},
				{key: "default/c", pod: newPod("c", phase(corev1.PodRunning)), want: Met},
				{key: "default/d", pod: newPod("d"), want: Pending},
				{key: "default/d", want: Met},
			},
		},
		{
			name: "min pods 0 with ready",
			spec: func() Spec { s := untilSpec("ready"); s.MinPods = 0; return s }(),
			steps: []step{
				{key: "default/a", pod: newPod("a"), initial: true, want: Pending},
				{key: "default/a", want: Met},
			},
		},
		{
			name: "replacement pod appearing later keeps it pending until ready",
			spec: untilSpec("ready"),
			steps: []step{
				{key: "default/old", pod: newPod("old", ready()), initial: true, want: Met},
				{key: "default/new", pod: newPod("new"), want: Pending},
				{key: "default/old", want: Pending},
				{key: "default/new", pod: newPod("new", phase(corev1.PodRunning)), want: Pending},
				{key: "default/new", pod: newPod("new", ready()), want: Met},
			},
		},
		{
			name: "healthy on a succeeded job pod",
			spec: untilSpec("healthy"),
			steps: []step{
				{key: "ci/job-x", pod: newPod("job-x", phase(corev1.PodRunning)), initial: true, want: Pending},
				{key: "ci/job-x", pod: newPod("job-x", phase(corev1.PodSucceeded),
					cond(corev1.PodReady, corev1.ConditionFalse, "PodCompleted", "")), want: Met},
			},
		},
		{
			name: "completed with a failed pod and fail-on none",
			spec: func() Spec { s := untilSpec("completed"); s.FailOn = nil; return s }(),
			steps: []step{
				{key: "ci/a", pod: newPod("a", phase(corev1.PodFailed)), initial: true, want: Met},
			},
		},
		{
			name: "several conditions at once",
			spec: untilSpec("running,condition=ContainersReady"),
			steps: []step{
				{key: "default/a", pod: newPod("a", phase(corev1.PodRunning)), initial: true, want: Pending},
				{key: "default/a", pod: newPod("a", phase(corev1.PodRunning),
					cond(corev1.ContainersReady, corev1.ConditionTrue, "", "")), want: Met},
			},
		},
		{
			name:  "gone with no pods at all",
			spec:  untilSpec("gone"),
			steps: []step{{key: "default/x", want: Met}},
		},
		{
			name: "gone waits for the last pod",
			spec: untilSpec("gone"),
			steps: []step{
				{key: "default/a", pod: newPod("a", ready()), initial: true, want: Pending},
				{key: "default/b", pod: newPod("b", ready(), deleting()), initial: true, want: Pending},
				{key: "default/a", want: Pending},
				{key: "default/b", want: Met},
				{key: "default/c", pod: newPod("c"), want: Pending},
			},
		},
		{
			name: "no until is never met",
			spec: Spec{FailOn: []string{"Evicted"}, MinPods: Unset, MaxRestarts: Unset},
			steps: []step{
				{key: "default/a", pod: newPod("a", ready()), initial: true, want: Pending},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.spec.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			runSteps(t, NewEvaluator(tt.spec), tt.steps)
		})
	}
}

func TestEvaluatorVerdictWithNoObservation(t *testing.T) {
	if got := NewEvaluator(untilSpec("gone")).Verdict(); got.State != Met {
		t.Errorf("gone with nothing observed: %v, want met", got.State)
	}
	if got := NewEvaluator(untilSpec("ready")).Verdict(); got.State != Pending {
		t.Errorf("ready with nothing observed: %v, want pending", got.State)
	}
}

func TestEvaluatorFailOn(t *testing.T) {
	crash := newPod("web-1", phase(corev1.PodRunning),
		waiting("app", "CrashLoopBackOff", "back-off 10s restarting failed container", 3))
	tests := []struct {
		name   string
		failOn string
		pod    *corev1.Pod
		want   Failure // zero: no failure
	}{
		{"crash loop", defaultFailOn, crash,
			Failure{Key: "k", Reason: "CrashLoopBackOff", Container: "app", Message: "back-off 10s restarting failed container"}},
		{"image pull", defaultFailOn, newPod("p", waiting("app", "ImagePullBackOff", "Back-off pulling image", 0)),
			Failure{Key: "k", Reason: "ImagePullBackOff", Container: "app", Message: "Back-off pulling image"}},
		{"init container terminated reason", "OOMKilled", newPod("p", initTerminated("init-db", "OOMKilled", 137)),
			Failure{Key: "k", Reason: "OOMKilled", Container: "init-db"}},
		{"regular container terminated reason", "Error", newPod("p", terminated("app", "Error", 1)),
			Failure{Key: "k", Reason: "Error", Container: "app"}},
		{"matched case-insensitively", "CrashLoopBackOff", newPod("p", waiting("app", "crashloopbackoff", "", 0)),
			Failure{Key: "k", Reason: "CrashLoopBackOff", Container: "app"}},
		{"failed phase", defaultFailOn, newPod("p", phase(corev1.PodFailed)),
			Failure{Key: "k", Reason: "Failed"}},
		{"evicted pod reason first", "Evicted,Failed", newPod("p", phase(corev1.PodFailed), podReason("Evicted", "low on memory")),
			Failure{Key: "k", Reason: "Evicted", Message: "low on memory"}},
		{"evicted through Failed", defaultFailOn, newPod("p", phase(corev1.PodFailed), podReason("Evicted", "low on memory")),
			Failure{Key: "k", Reason: "Failed", Message: "Evicted: low on memory"}},
		{"reason not listed", "ImagePullBackOff", crash, Failure{}},
		{"fail-on none", "none", crash, Failure{}},
		{"last state is ignored", defaultFailOn, newPod("p", ready(), func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].LastTerminationState.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
		}), Failure{}},
		{"pod being deleted is ignored", defaultFailOn, newPod("p", phase(corev1.PodFailed), deleting()), Failure{}},
		{"healthy pod", defaultFailOn, newPod("p", ready()), Failure{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reasons, err := ParseReasons(tt.failOn)
			if err != nil {
				t.Fatal(err)
			}
			spec := untilSpec("ready")
			spec.FailOn = reasons
			e := NewEvaluator(spec)
			e.Observe("k", tt.pod, true)
			got := e.Verdict()
			if tt.want == (Failure{}) {
				if got.State == Failed {
					t.Fatalf("unexpected failure: %s", got)
				}
				return
			}
			if got.State != Failed || got.Failure != tt.want {
				t.Fatalf("Verdict() = %v %+v, want failed %+v", got.State, got.Failure, tt.want)
			}
		})
	}
}

func TestEvaluatorFailureIsLatched(t *testing.T) {
	e := NewEvaluator(untilSpec("ready"))
	e.Observe("default/a", newPod("a", waiting("app", "ErrImagePull", "not found", 0)), false)
	first := e.Verdict()
	if first.State != Failed {
		t.Fatalf("state = %v, want failed", first.State)
	}
	// A second failing pod does not replace the first failure.
	e.Observe("default/b", newPod("b", phase(corev1.PodFailed)), false)
	// Recovering or deleting the failing pod does not clear it either.
	e.Observe("default/a", newPod("a", ready()), false)
	e.Forget("default/a")
	e.Forget("default/b")
	e.Observe("default/c", newPod("c", ready()), false)
	got := e.Verdict()
	if got.State != Failed || got.Failure != first.Failure {
		t.Fatalf("after recovery: %v %+v, want the first failure %+v", got.State, got.Failure, first.Failure)
	}
	if got.Failure.Key != "default/a" || got.Failure.Reason != "ErrImagePull" {
		t.Errorf("failure = %+v", got.Failure)
	}
}

func TestEvaluatorMaxRestarts(t *testing.T) {
	withRestarts := func(name, u string, n int32) *corev1.Pod {
		return newPod(name, uid(u), ready(), running("app", n))
	}
	tests := []struct {
		name  string
		max   int
		steps []step
		want  Failure
	}{
		{
			name: "initial pod counts from its first restart count",
			max:  2,
			steps: []step{
				{key: "d/a", pod: withRestarts("a", "1", 5), initial: true, want: Met},
				{key: "d/a", pod: withRestarts("a", "1", 7), want: Met},
				{key: "d/a", pod: withRestarts("a", "1", 8), want: Failed},
			},
			want: Failure{Key: "d/a", Reason: ReasonTooManyRestarts, Container: "app", Restarts: 3, Limit: 2},
		},
		{
			name: "pod that appears later counts from zero",
			max:  2,
			steps: []step{
				{key: "d/b", pod: withRestarts("b", "1", 3), want: Failed},
			},
			want: Failure{Key: "d/b", Reason: ReasonTooManyRestarts, Container: "app", Restarts: 3, Limit: 2},
		},
		{
			name: "max restarts 0 fails on the first restart of a new pod",
			max:  0,
			steps: []step{
				{key: "d/b", pod: withRestarts("b", "1", 0), want: Met},
				{key: "d/b", pod: withRestarts("b", "1", 1), want: Failed},
			},
			want: Failure{Key: "d/b", Reason: ReasonTooManyRestarts, Container: "app", Restarts: 1, Limit: 0},
		},
		{
			name: "a recreated pod under the same key starts from zero",
			max:  2,
			steps: []step{
				{key: "d/s-0", pod: withRestarts("s-0", "old", 10), initial: true, want: Met},
				{key: "d/s-0", pod: withRestarts("s-0", "new", 2), want: Met},
				{key: "d/s-0", pod: withRestarts("s-0", "new", 3), want: Failed},
			},
			want: Failure{Key: "d/s-0", Reason: ReasonTooManyRestarts, Container: "app", Restarts: 3, Limit: 2},
		},
		{
			name: "a container first reported later in an initial pod counts from zero",
			max:  1,
			steps: []step{
				{key: "d/a", pod: withRestarts("a", "1", 4), initial: true, want: Met},
				{key: "d/a", pod: newPod("a", uid("1"), ready(), running("app", 4), running("side", 2)), want: Failed},
			},
			want: Failure{Key: "d/a", Reason: ReasonTooManyRestarts, Container: "side", Restarts: 2, Limit: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := untilSpec("ready")
			spec.MaxRestarts = tt.max
			e := NewEvaluator(spec)
			runSteps(t, e, tt.steps)
			if got := e.Verdict().Failure; got != tt.want {
				t.Errorf("failure = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestEvaluatorMaxRestartsOff(t *testing.T) {
	e := NewEvaluator(untilSpec("ready"))
	e.Observe("d/a", newPod("a", ready(), running("app", 1000)), false)
	if got := e.Verdict(); got.State != Met {
		t.Fatalf("state = %v, want met: restarts are not checked without --max-restarts", got.State)
	}
}

func TestEvaluatorStatuses(t *testing.T) {
	e := NewEvaluator(untilSpec("ready"))
	e.ObserveStatus("d/a", newPod("a", ready()), "Running", true)
	e.ObserveStatus("d/b", newPod("b"), "ContainerCreating", true)
	e.Observe("d/c", newPod("c"), true)             // worked out here: Pending
	e.Observe("d/d", newPod("d", phase("")), false) // no phase at all
	want := map[string]int{"Running": 1, "ContainerCreating": 1, "Pending": 1, "Unknown": 1}
	if got := e.Statuses(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Statuses() = %v, want %v", got, want)
	}
	e.ObserveStatus("d/b", newPod("b", ready()), "Running", false)
	e.Forget("d/c")
	e.Forget("d/c") // forgetting twice is harmless
	e.Forget("d/never")
	want = map[string]int{"Running": 2, "Unknown": 1}
	if got := e.Statuses(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Statuses() = %v, want %v", got, want)
	}
	got := e.Statuses()
	got["Running"] = 99
	if e.Statuses()["Running"] != 2 {
		t.Error("Statuses() returned the Evaluator's own map")
	}
	if r := e.Verdict(); r.Pods != 3 || r.Unsatisfied != 1 {
		t.Errorf("Verdict() pods=%d unsatisfied=%d, want 3 and 1", r.Pods, r.Unsatisfied)
	}
}

func TestEvaluatorUnsatisfiedKeys(t *testing.T) {
	e := NewEvaluator(untilSpec("ready"))
	e.Observe("d/c", newPod("c"), true)
	e.Observe("d/ok", newPod("ok", ready()), true)
	e.Observe("d/a", newPod("a"), true)
	if got, want := e.UnsatisfiedKeys(), []string{"d/a", "d/c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("UnsatisfiedKeys() = %q, want %q", got, want)
	}
	e.Observe("d/z", newPod("z", waiting("app", "CrashLoopBackOff", "", 1)), false)
	if got, want := e.UnsatisfiedKeys(), []string{"d/z", "d/a", "d/c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("UnsatisfiedKeys() = %q, want failing pod first: %q", got, want)
	}
	e.Forget("d/z")
	if got, want := e.UnsatisfiedKeys(), []string{"d/a", "d/c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("UnsatisfiedKeys() = %q, want %q", got, want)
	}
}

func TestEvaluatorDoesNotMutatePods(t *testing.T) {
	spec := untilSpec("ready,condition=ContainersReady")
	spec.MaxRestarts = 0
	pods := []*corev1.Pod{
		newPod("a", ready(), running("app", 3), initTerminated("init", "Completed", 0)),
		newPod("b", phase(corev1.PodFailed), podReason("Evicted", "x")),
		newPod("c", waiting("app", "CrashLoopBackOff", "m", 2), deleting()),
	}
	e := NewEvaluator(spec)
	for i, p := range pods {
		before := p.DeepCopy()
		e.Observe(fmt.Sprint(i), p, i == 0)
		_ = Explain(p, spec.Conditions, nil)
		if !reflect.DeepEqual(before, p) {
			t.Errorf("pod %s was modified", p.Name)
		}
	}
}

func TestResultWords(t *testing.T) {
	tests := []struct {
		name string
		r    Result
		text string
	}{
		{"met", Result{State: Met, Pods: 3, MinPods: 1, Until: "ready"}, "all 3 matching pods satisfy ready"},
		{"gone met", Result{State: Met, Until: "gone"}, "no matching pod is left"},
		{"gone pending", Result{Pods: 2, Unsatisfied: 2, Until: "gone"}, "2 matching pods are still there"},
		{"unsatisfied", Result{Pods: 3, Unsatisfied: 1, MinPods: 1, Until: "ready"}, "1 of 3 matching pods do not satisfy ready"},
		{"too few", Result{Pods: 1, MinPods: 3, Until: "ready"}, "1 matching pods, want at least 3 (ready)"},
		{"no until", Result{Pods: 4}, "4 matching pods, no failure seen"},
		{"failed", Result{State: Failed, Until: "ready", Failure: Failure{Key: "d/a", Reason: "CrashLoopBackOff", Container: "app", Message: "back-off\n10s"}},
			`pod d/a: container "app" is CrashLoopBackOff: back-off 10s`},
		{"failed phase", Result{State: Failed, Failure: Failure{Key: "d/a", Reason: "Failed"}}, "pod d/a has phase Failed"},
		{"evicted", Result{State: Failed, Failure: Failure{Key: "d/a", Reason: "Evicted", Message: "low memory"}}, "pod d/a is Evicted: low memory"},
		{"restarts", Result{State: Failed, Failure: Failure{Key: "d/a", Reason: ReasonTooManyRestarts, Container: "app", Restarts: 3, Limit: 2}},
			`pod d/a: container "app" restarted 3 times while the check ran, more than --max-restarts 2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.String(); got != tt.text {
				t.Errorf("String() = %q, want %q", got, tt.text)
			}
		})
	}
}

func TestVerdictDoesNotAllocate(t *testing.T) {
	e := NewEvaluator(untilSpec("ready"))
	for i := range 1000 {
		e.Observe(fmt.Sprintf("d/p-%d", i), newPod("p", ready()), true)
	}
	if n := testing.AllocsPerRun(100, func() { _ = e.Verdict() }); n != 0 {
		t.Errorf("Verdict allocates %v times per call, want 0", n)
	}
}

// BenchmarkObserve50k measures one update against 50,000 known pods; the
// cost must not grow with the number of pods.
func BenchmarkObserve50k(b *testing.B) {
	spec := untilSpec("ready")
	spec.MaxRestarts = 3
	e := NewEvaluator(spec)
	keys := make([]string, 50000)
	for i := range keys {
		keys[i] = fmt.Sprintf("d/p-%d", i)
		e.Observe(keys[i], newPod("p", ready(), running("app", 1)), true)
	}
	pod := newPod("p", phase(corev1.PodRunning), running("app", 2))
	for i := 0; b.Loop(); i++ {
		e.ObserveStatus(keys[i%len(keys)], pod, "Running", false)
		if e.Verdict().State == Failed {
			b.Fatal(strings.TrimSpace(e.Verdict().String()))
		}
	}
}

// Without conditions, --fail-on or --max-restarts, observing a pod with
// its STATUS cell reads only its metadata: the counts and the verdict are
// the same from a pod that holds nothing else. Anything that judges the
// pod reads the rest.
func TestReadsPodOnlyWhenJudging(t *testing.T) {
	plain := Spec{MinPods: Unset, MaxRestarts: Unset}
	pods := map[string]*corev1.Pod{
		"Running":          newPod("web", ready()),
		"CrashLoopBackOff": newPod("crash", waiting("app", "CrashLoopBackOff", "back-off", 3)),
		"Evicted":          newPod("evicted", phase(corev1.PodFailed), func(p *corev1.Pod) { p.Status.Reason = "Evicted" }),
		"Terminating":      newPod("old", ready(), deleting()),
	}
	full, meta := NewEvaluator(plain), NewEvaluator(plain)
	for cell, p := range pods {
		if full.ReadsPod(cell) {
			t.Fatalf("a run that judges nothing reads the pod with STATUS %q", cell)
		}
		full.ObserveStatus(p.Name, p, cell, true)
		meta.ObserveStatus(p.Name, &corev1.Pod{ObjectMeta: p.ObjectMeta}, cell, true)
	}
	if a, b := full.Statuses(), meta.Statuses(); !reflect.DeepEqual(a, b) {
		t.Errorf("statuses from whole pods %v, from their metadata %v", a, b)
	}
	if a, b := full.Verdict(), meta.Verdict(); a != b {
		t.Errorf("verdict from whole pods %+v, from their metadata %+v", a, b)
	}
	if !full.ReadsPod("") {
		t.Error("without a STATUS cell the pod's status is not read")
	}
	failOn := plain
	failOn.FailOn = []string{"CrashLoopBackOff"}
	restarts := plain
	restarts.MaxRestarts = 0
	for name, spec := range map[string]Spec{"--until": untilSpec("ready"), "--fail-on": failOn, "--max-restarts": restarts} {
		if !NewEvaluator(spec).ReadsPod("Running") {
			t.Errorf("with %s the pod is not read", name)
		}
	}
}

// A run that judges nothing and has no STATUS cell counts the same
// statuses and reaches the same verdict with ObserveLater, reading each
// pod only when Statuses is first asked, and only the pod's last state;
// a pod changed or gone after that is counted right.
func TestObserveLaterReadsPodsOnlyForStatuses(t *testing.T) {
	plain := Spec{MinPods: Unset, MaxRestarts: Unset}
	pods := []*corev1.Pod{
		newPod("web", ready()),
		newPod("crash", waiting("app", "CrashLoopBackOff", "back-off", 3)),
		newPod("old", ready(), deleting()),
		newPod("pending"),
	}
	now, later := NewEvaluator(plain), NewEvaluator(plain)
	if later.Judges() {
		t.Fatal("a run without conditions, --fail-on or --max-restarts judges its pods")
	}
	reads := 0
	whole := func(p *corev1.Pod) func() *corev1.Pod { return func() *corev1.Pod { reads++; return p } }
	for _, p := range pods {
		now.Observe(p.Name, p, true)
		// A first state, replaced before anything is asked: never read.
		later.ObserveLater(p.Name, &corev1.Pod{ObjectMeta: p.ObjectMeta}, whole(newPod(p.Name, ready())), true)
		later.ObserveLater(p.Name, &corev1.Pod{ObjectMeta: p.ObjectMeta}, whole(p), false)
	}
	if reads != 0 {
		t.Fatalf("%d pods read before Statuses", reads)
	}
	if a, b := now.Statuses(), later.Statuses(); !reflect.DeepEqual(a, b) {
		t.Errorf("statuses observed at once %v, later %v", a, b)
	}
	if reads != len(pods) {
		t.Errorf("%d pods read for Statuses, want %d", reads, len(pods))
	}
	if a, b := now.Verdict(), later.Verdict(); a != b {
		t.Errorf("verdict observed at once %+v, later %+v", a, b)
	}
	for _, e := range []*Evaluator{now, later} {
		e.Forget("crash")
	}
	crash := newPod("web", waiting("app", "CrashLoopBackOff", "back-off", 4))
	now.Observe("web", crash, false)
	later.ObserveLater("web", &corev1.Pod{ObjectMeta: crash.ObjectMeta}, whole(crash), false)
	if a, b := now.Statuses(), later.Statuses(); !reflect.DeepEqual(a, b) || b["CrashLoopBackOff"] != 1 || b["Running"] != 0 {
		t.Errorf("after a change and a deletion: statuses observed at once %v, later %v", a, b)
	}
}

// A pod of a revision being replaced fails neither through --fail-on nor
// through --max-restarts; once it is no longer replaced, it fails.
func TestEvaluatorSparesReplacedPods(t *testing.T) {
	spec := untilSpec("ready")
	spec.MaxRestarts = 0
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
	}{
		{"crash loop", newPod("old-1", waiting("app", "CrashLoopBackOff", "back-off", 0))},
		{"restarts", newPod("old-1", running("app", 3))},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := NewEvaluator(spec)
			replaced := true
			e.SetReplaced(func(key string, _ *corev1.Pod) bool { return replaced && key == "d/old-1" })
			e.Observe("d/old-1", c.pod, false)
			if v := e.Verdict(); v.State != Pending {
				t.Fatalf("verdict %v (%s), want pending while the pod is replaced", v.State, v)
			}
			replaced = false
			e.Observe("d/old-1", c.pod, false)
			if v := e.Verdict(); v.State != Failed || v.Failure.Key != "d/old-1" {
				t.Fatalf("verdict %v (%s), want failed on d/old-1", v.State, v)
			}
		})
	}
}
