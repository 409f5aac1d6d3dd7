package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/exitcode"
)

// The verdict latency is how long a CI check takes to answer once the
// cluster has decided it: `kubectl podsync -A --until ready` runs over
// every pod of the size while other pods change at the churn's rate; one
// pod, not ready when the check started, then turns Ready (the check is
// met: exit 0) or its container enters CrashLoopBackOff (the check fails:
// exit 4). The latency runs from the moment the bench sends that status
// write to the moment the process has exited.

// decidedPod is the index of the pod whose change decides each check;
// index 0 is the sentinel.
const decidedPod = 1

// verdictCase is one way a check is decided.
type verdictCase struct {
	id, label string
	code      int // the contract's: 0 met, 4 failed
	decide    func(*corev1.PodStatus)
	// args are added to the check's command line.
	args []string
	// waitFor is the decided state to kubectl wait's --for.
	waitFor string
}

var verdictCases = []verdictCase{
	{id: "ready", label: "the last pod turns Ready", code: 0, decide: func(st *corev1.PodStatus) { setReady(st, true) },
		waitFor: "condition=Ready"},
	// The bench's nodes have no kubelet: a read of the failed container's
	// log would wait for the diagnosis bound (2 s) on an address that does
	// not answer, where a kubelet answers in milliseconds. The check reads
	// the pod's Events and no log.
	{id: "crash", label: "a container enters CrashLoopBackOff (`--log-lines 0`)", code: 4, decide: crashLoop, args: []string{"--log-lines", "0"},
		waitFor: "jsonpath={.status.containerStatuses[0].state.waiting.reason}=CrashLoopBackOff"},
}

// verdictResult is every trial of one command and one case.
type verdictResult struct {
	label string // the command
	build string // "" for this tree
	// wait is the floor: `kubectl wait` watching the decided pod alone,
	// which exits 0 on either decision.
	wait      bool
	cs        verdictCase
	latencies []time.Duration
	watching  []time.Duration // start to watching, each trial
	failures  []string
}

func (v *verdictResult) percentiles() (p50, p99, maxD time.Duration) {
	return percentiles(append([]time.Duration(nil), v.latencies...))
}

// verdictCommands are this tree's plugin, each -compare build's, and the
// floor.
func (e *env) verdictCommands() []verdictResult {
	out := []verdictResult{{label: "`kubectl podsync -A --until ready`"}}
	for _, b := range e.cfg.compare {
		out = append(out, verdictResult{label: "`kubectl podsync -A --until ready`, build " + b.name, build: b.name})
	}
	return append(out, verdictResult{label: "floor: `kubectl wait` on the decided pod alone", wait: true})
}

// measureVerdicts runs cfg.verdictRuns trials of every command and case,
// alternating them, under churn at rate.
func (e *env) measureVerdicts(ctx context.Context, l *loader, rate float64) ([]*verdictResult, error) {
	var results []*verdictResult
	for _, c := range e.verdictCommands() {
		for _, cs := range verdictCases {
			r := c
			r.cs = cs
			results = append(results, &r)
		}
	}
	churn, err := e.startBackground(ctx, l, rate)
	if err != nil {
		return nil, err
	}
	defer churn.stop()
	// The decided pod is left Ready, as the loader made it: a later size,
	// or a run attached to this cluster, waits for every pod to be.
	defer func() {
		ns, name := l.podNamespace(decidedPod), l.podName(decidedPod)
		if err := writeStatus(context.WithoutCancel(ctx), l, ns, name, func(st *corev1.PodStatus) { setReady(st, true) }); err != nil {
			e.logf("verdict latency: %v", err)
		}
	}()
	e.logf("verdict latency: %d trials of %d commands and cases under churn at %g/s", e.cfg.verdictRuns, len(results), rate)
	rng := rand.New(rand.NewPCG(uint64(l.total), 7))
	for round := range e.cfg.verdictRuns {
		for _, i := range rng.Perm(len(results)) {
			r := results[i]
			lat, watching, err := e.verdictTrial(ctx, l, r)
			if ctx.Err() != nil {
				return results, ctx.Err()
			}
			if err != nil {
				r.failures = append(r.failures, err.Error())
				e.logf("verdict %s %s, round %d: %v", r.build, r.cs.id, round+1, err)
				continue
			}
			r.latencies, r.watching = append(r.latencies, lat), append(r.watching, watching)
		}
	}
	sent, failed := churn.stop()
	if sent == 0 || failed > sent/100 {
		return results, fmt.Errorf("verdict latency: the churn beside it sent %d updates, %d failed", sent, failed)
	}
	return results, nil
}

// verdictTrial starts a check while the decided pod is not ready, waits
// until the check watches, decides it and times the exit.
func (e *env) verdictTrial(ctx context.Context, l *loader, r *verdictResult) (latency, watching time.Duration, err error) {
	ns, name := l.podNamespace(decidedPod), l.podName(decidedPod)
	if err := writeStatus(ctx, l, ns, name, func(st *corev1.PodStatus) { setReady(st, false) }); err != nil {
		return 0, 0, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	args := append([]string{"podsync" + r.build, "-A", "--until", "ready", "--timeout", "9m"}, r.cs.args...)
	if r.wait {
		// -v=6 logs the watch's answer, which says it watches: kubectl
		// wait prints nothing until it is done.
		args = []string{"wait", "-n", ns, "pod/" + name, "--for", r.cs.waitFor, "--timeout", "9m", "-v=6"}
	}
	cmd := exec.CommandContext(pctx, e.kubectl, args...)
	cmd.Env = e.environ()
	spy := &updateSpy{name: l.podName(0)}
	var stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = spy, &stderr
	seen := spy.seen.Load
	if r.wait {
		cmd.Stdout = &lockedBuffer{}
		seen = func() bool { return strings.Contains(stderr.String(), "watch=true") }
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, fmt.Errorf("start: %w", err)
	}
	var ended time.Time
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); ended = time.Now(); close(exited) }()
	defer killUnlessExited(cmd, exited)
	if err := e.waitWatching(ctx, l, seen, exited); err != nil {
		return 0, 0, fmt.Errorf("%w; stderr: %s", err, tail(stderr.String()))
	}
	watching = time.Since(started)
	sent := time.Now()
	if err := writeStatus(ctx, l, ns, name, r.cs.decide); err != nil {
		return 0, 0, err
	}
	select {
	case <-exited:
	case <-time.After(2 * time.Minute):
		return 0, 0, fmt.Errorf("no exit within 2m of the deciding change; stderr: %s", tail(stderr.String()))
	}
	want := r.cs.code
	if r.wait {
		want = 0
	}
	if code := exitcode.Of(waitErr); code != want {
		return 0, 0, fmt.Errorf("exit code %d, want %d; stderr: %s", code, want, tail(stderr.String()))
	}
	return ended.Sub(sent), watching, nil
}

// updateSpy reads the check's table and notes an UPDATE row of one pod.
type updateSpy struct {
	name    string
	partial []byte
	seen    atomic.Bool
}

func (s *updateSpy) Write(p []byte) (int, error) {
	if s.seen.Load() {
		return len(p), nil
	}
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		f := strings.Fields(string(s.partial[:i]))
		if len(f) > 2 && f[0] == "UPDATE" && f[2] == s.name {
			s.seen.Store(true)
		}
		s.partial = s.partial[i+1:]
	}
	return len(p), nil
}

// writeStatus changes a pod's status with change, retrying on conflicts
// with the churn.
func writeStatus(ctx context.Context, l *loader, ns, name string, change func(*corev1.PodStatus)) error {
	pods := l.cs.CoreV1().Pods(ns)
	for attempt := 0; ; attempt++ {
		pod, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("read pod %s/%s: %w", ns, name, err)
		}
		change(&pod.Status)
		if _, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{FieldManager: fieldManager}); err == nil {
			return nil
		}
		if attempt >= 3 {
			return fmt.Errorf("write the status of pod %s/%s: %w", ns, name, err)
		}
	}
}

// setReady makes the pod's containers running and ready, or not ready.
func setReady(st *corev1.PodStatus, ready bool) {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	now := metav1.Now()
	for i := range st.Conditions {
		if c := &st.Conditions[i]; c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			c.Status, c.LastTransitionTime = status, now
		}
	}
	st.Phase = corev1.PodRunning
	for i := range st.ContainerStatuses {
		c := &st.ContainerStatuses[i]
		c.Ready = ready
		if c.State.Running == nil {
			c.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
		}
	}
}

// crashLoop is what a kubelet reports when the first container keeps
// exiting with an error.
func crashLoop(st *corev1.PodStatus) {
	setReady(st, false)
	if len(st.ContainerStatuses) == 0 {
		return
	}
	c := &st.ContainerStatuses[0]
	c.RestartCount++
	c.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 1, Reason: "Error", StartedAt: metav1.Now(), FinishedAt: metav1.Now()}}
	c.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container"}}
}

// background updates pods at a steady rate, as the churn does, while the
// verdict trials run.
type background struct {
	cancel       context.CancelFunc
	done         chan struct{}
	sent, failed atomic.Int64
	once         sync.Once
}

// startBackground updates every pod but the sentinel and the decided one
// in a shuffled order, round robin, at rate.
func (e *env) startBackground(ctx context.Context, l *loader, rate float64) (*background, error) {
	n := min(l.total-2, int(rate*60))
	order := rand.Perm(l.total - 2)[:n]
	want := map[string]bool{}
	for _, i := range order {
		want[l.podKey(i+2)] = true
	}
	latest := map[string]*corev1.Pod{}
	if err := eachPod(ctx, l.cs, metav1.ListOptions{}, func(p *corev1.Pod) {
		if k := p.Namespace + "/" + p.Name; want[k] {
			latest[k] = p.DeepCopy()
		}
	}); err != nil {
		return nil, err
	}
	u := &updater{cs: l.cs, method: e.cfg.method, pods: latest}
	bctx, cancel := context.WithCancel(ctx)
	b := &background{cancel: cancel, done: make(chan struct{})}
	jobs := make(chan int, 1024)
	var wg sync.WaitGroup
	for range min(64, max(4, int(rate/25))) {
		wg.Go(func() {
			for seq := range jobs {
				i := order[seq%len(order)] + 2
				if _, _, err := u.update(bctx, l.podNamespace(i), l.podName(i), seq+1); err != nil && bctx.Err() == nil {
					b.failed.Add(1)
				}
			}
		})
	}
	go func() {
		defer close(b.done)
		defer wg.Wait()
		defer close(jobs)
		tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer tick.Stop()
		for seq := 0; ; seq++ {
			select {
			case <-bctx.Done():
				return
			case <-tick.C:
			}
			select {
			case jobs <- seq:
				b.sent.Add(1)
			case <-bctx.Done():
				return
			}
		}
	}()
	return b, nil
}

// stop ends the updates and says how many were sent and failed.
func (b *background) stop() (sent, failed int) {
	b.once.Do(func() { b.cancel(); <-b.done })
	return int(b.sent.Load()), int(b.failed.Load())
}
