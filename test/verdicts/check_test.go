package verdicts

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// check is one moment at which the three judges start on the target
// together: podsync, kubectl and kstatus.
type check struct {
	at      time.Time
	timeout time.Duration
	podsync run
	// kubectl is `kubectl rollout status`, or for a Job the first of
	// `kubectl wait --for=condition=Complete` and `--for=condition=Failed`
	// to end.
	kubectl run
	// kubectlSays: "met", "failed", "timeout" or "error".
	kubectlSays string
	// kstatus: the first moments at which kstatus computed Current and
	// Failed on the object as the watch delivered it (zero: never).
	kstatusCurrent, kstatusFailed time.Time
	// kstatusExcused: the first moment kstatus computed InProgress for a
	// reason the invariants make an exception of (see judge_test.go).
	kstatusExcused time.Time
	kstatusLast    string
	// ruleMet and ruleFailed: the first moments at which kubectlRule said
	// so on a state the watch delivered (zero: never).
	ruleMet, ruleFailed time.Time
	// ruleSpans are the spans of time in which kubectlRule held (an open
	// one has a zero end).
	ruleSpans []span
	// samples: from the watches, after each event, how many of the
	// workload's pods are ready and not being deleted, and the object's
	// spec.replicas (-1 for kinds without).
	mu      sync.Mutex
	samples []sample
	ready   map[string]bool
	want    int64
}

// sample is the workload's state at one moment.
type sample struct {
	at          time.Time
	ready, want int64
}

// record appends the state after an event.
func (c *check) record() {
	n := int64(0)
	for _, r := range c.ready {
		if r {
			n++
		}
	}
	c.samples = append(c.samples, sample{at: time.Now(), ready: n, want: c.want})
}

// stateAt is the last sample taken at or before t.
func (c *check) stateAt(t time.Time) (sample, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out sample
	found := false
	for _, s := range c.samples {
		if s.at.After(t) {
			break
		}
		out, found = s, true
	}
	return out, found
}

// run is one process's end.
type run struct {
	args []string
	harness.Result
	end time.Time
}

// startCheck starts the three judges on the target; they run while the
// next steps play.
func (p *play) startCheck(timeout time.Duration) {
	c := &check{at: time.Now(), timeout: timeout, ready: map[string]bool{}, want: -1}
	p.mu.Lock()
	p.checks = append(p.checks, c)
	p.mu.Unlock()
	p.logf("check %s", timeout)
	t := timeout.String()
	cond := "ready"
	if p.sc.kind == "Job" {
		cond = "healthy"
	}
	p.follow(c)
	var judges sync.WaitGroup
	judges.Go(func() {
		c.podsync = runTool("podsync", "-n", p.ns, p.target(), "--until", cond, "--timeout", t)
	})
	judges.Go(func() { p.runKubectl(c, t) })
	p.wg.Go(func() {
		judges.Wait()
		// kstatus is asked until both tools ended, and a little longer:
		// its verdict is compared with theirs within the tolerance.
		time.Sleep(tolerance)
		p.unfollow(c)
		p.logf("check at %.1fs ended: podsync exit %d at %.1fs; kubectl %s at %.1fs; kstatus Current at %s, Failed at %s (last: %s)",
			c.at.Sub(p.start).Seconds(), c.podsync.Code, c.podsync.end.Sub(p.start).Seconds(), c.kubectlSays, c.kubectl.end.Sub(p.start).Seconds(),
			p.since(c.kstatusCurrent), p.since(c.kstatusFailed), c.kstatusLast)
	})
}

func (p *play) since(at time.Time) string {
	if at.IsZero() {
		return "never"
	}
	return fmt.Sprintf("%.1fs", at.Sub(p.start).Seconds())
}

// runKubectl runs kubectl's own judge of the target.
func (p *play) runKubectl(c *check, timeout string) {
	if k, ok := crKinds[p.sc.kind]; ok {
		c.kubectl = runTool("wait", "-n", p.ns, "--for=condition="+k.waitFor, p.target(), "--timeout="+timeout)
		c.kubectlSays = kubectlVerdict(c.kubectl, "met")
		return
	}
	if p.sc.kind != "Job" {
		c.kubectl = runTool("rollout", "status", "-n", p.ns, p.target(), "--timeout="+timeout)
		c.kubectlSays = kubectlVerdict(c.kubectl, "met")
		return
	}
	// kubectl waits for one condition: the Job's verdict is whichever of
	// Complete and Failed comes first.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, cond := range []string{"Complete", "Failed"} {
		wg.Go(func() {
			r := runToolCtx(ctx, "wait", "-n", p.ns, "--for=condition="+cond, p.target(), "--timeout="+timeout)
			mu.Lock()
			defer mu.Unlock()
			says := kubectlVerdict(r, map[string]string{"Complete": "met", "Failed": "failed"}[cond])
			if ctx.Err() != nil {
				return // the other one decided
			}
			if says == "met" || says == "failed" || c.kubectlSays == "" {
				c.kubectl, c.kubectlSays = r, says
			}
			if says == "met" || says == "failed" {
				cancel()
			}
		})
	}
	wg.Wait()
}

// kubectlVerdict reads kubectl's exit: success means what success means
// for this command.
func kubectlVerdict(r run, success string) string {
	switch {
	case r.Code == 0:
		return success
	case strings.Contains(r.Stderr, "timed out waiting"):
		return "timeout"
	case strings.Contains(r.Stderr, "exceeded its progress deadline"):
		return "failed"
	}
	return "error"
}

// watch follows the object and its pods from the play's start to its end,
// and gives every state to the checks running then: one watch, started
// before any check, so a check that starts on a busy machine still judges
// the state in effect at its start.
func (p *play) watch(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { p.watchObject(ctx) })
	wg.Go(func() { p.watchPods(ctx) })
	wg.Wait()
}

// follow makes c one of the checks the watches feed, starting with the
// state in effect now.
func (p *play) follow(c *check) {
	p.watchMu.Lock()
	defer p.watchMu.Unlock()
	if p.last != nil {
		c.observe(p.last, c.at)
	}
	c.mu.Lock()
	for k, v := range p.ready {
		c.ready[k] = v
	}
	c.record()
	c.mu.Unlock()
	p.following = append(p.following, c)
}

func (p *play) unfollow(c *check) {
	p.watchMu.Lock()
	defer p.watchMu.Unlock()
	for i, f := range p.following {
		if f == c {
			p.following = append(p.following[:i], p.following[i+1:]...)
			return
		}
	}
}

func (p *play) watchObject(ctx context.Context) {
	res := p.dyn.Resource(gvr(p.sc.kind)).Namespace(p.ns)
	for ctx.Err() == nil {
		w, err := res.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			now := time.Now()
			p.watchMu.Lock()
			p.last = u
			for _, c := range p.following {
				c.observe(u, now)
			}
			p.watchMu.Unlock()
		}
		w.Stop()
	}
}

// observe computes kubectl's rule and kstatus on one state of the object,
// seen at now.
func (c *check) observe(u *unstructured.Unstructured, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); found {
		c.want = n
		c.record()
	}
	rule := kubectlRule(u)
	switch {
	case rule == "met" && c.ruleMet.IsZero():
		c.ruleMet = now
	case rule == "failed" && c.ruleFailed.IsZero():
		c.ruleFailed = now
	}
	open := len(c.ruleSpans) > 0 && c.ruleSpans[len(c.ruleSpans)-1].to.IsZero()
	switch {
	case rule == "met" && !open:
		c.ruleSpans = append(c.ruleSpans, span{from: now})
	case rule != "met" && open:
		c.ruleSpans[len(c.ruleSpans)-1].to = now
	}
	r, err := kstatus.Compute(u)
	if err != nil {
		return
	}
	c.kstatusLast = string(r.Status) + ": " + r.Message
	switch {
	case r.Status == kstatus.CurrentStatus && c.kstatusCurrent.IsZero():
		c.kstatusCurrent = now
	case r.Status == kstatus.FailedStatus && c.kstatusFailed.IsZero():
		c.kstatusFailed = now
	case c.kstatusExcused.IsZero() && kstatusExcused(u, r):
		c.kstatusExcused = now
	}
}

// watchPods keeps which pods of the workload are ready and not being
// deleted, for the play and each check it feeds.
func (p *play) watchPods(ctx context.Context) {
	for ctx.Err() == nil {
		w, err := p.cs.CoreV1().Pods(p.ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			ready := ev.Type != watch.Deleted && pod.DeletionTimestamp == nil && harness.IsReady(pod)
			p.watchMu.Lock()
			p.ready[pod.Name] = ready
			for _, c := range p.following {
				c.mu.Lock()
				c.ready[pod.Name] = ready
				c.record()
				c.mu.Unlock()
			}
			p.watchMu.Unlock()
		}
		w.Stop()
	}
}

// runLimit guards against a tool that ignores its --timeout.
const runLimit = 2 * time.Minute

func runTool(args ...string) run { return runToolCtx(context.Background(), args...) }

func runToolCtx(ctx context.Context, args ...string) run {
	ctx, cancel := context.WithTimeout(ctx, runLimit)
	defer cancel()
	cmd := env.Command(ctx, nil, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	end := time.Now()
	return run{args: args, Result: harness.Result{Code: harness.ExitCode(err), Stdout: stdout.String(), Stderr: stderr.String(), Took: end.Sub(start), Ended: end}, end: end}
}
