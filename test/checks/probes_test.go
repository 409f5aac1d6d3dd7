package checks

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// probeBudget is the budget podsync works out for probedYAML's container:
// periodSeconds 2 × failureThreshold 4, plus one period and the 1 s
// timeout of margin.
const probeBudget = 11 * time.Second

// probeMessage is what the harness, as a kubelet, says of the failing
// probe.
const probeMessage = `Readiness probe failed: Get "http://10.0.0.7:8080/healthz": dial tcp 10.0.0.7:8080: connect: connection refused`

// probedYAML is a one-pod Deployment whose container has a readiness
// probe and stays Running but not ready (kwok's never-ready stage, which
// also writes one Unhealthy Event as the kubelet would).
func probedYAML(name string) string {
	return strings.Replace(deploymentYAML(name, "registry.example/"+name+":1", 1, state(localcluster.StateNeverReady)),
		"        image: registry.example/"+name+":1\n",
		"        image: registry.example/"+name+":1\n"+
			"        readinessProbe:\n"+
			"          httpGet: {path: /healthz, port: 8080}\n"+
			"          periodSeconds: 2\n"+
			"          failureThreshold: 4\n", 1)
}

// runningPod waits for the one pod of app=name to run, and returns it.
func runningPod(t *testing.T, ns, name string) corev1.Pod {
	t.Helper()
	waitPods(t, ns, "app="+name, 1, "running", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	})
	return pods(t, ns, "app="+name)[0]
}

// A Deployment whose pod runs but never turns ready while the kubelet
// reports its readiness probe failing fails at about the probe's budget,
// not at --timeout, saying the probe's message and the container's log.
func TestProbeThatNeverPassesFails(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, probedYAML("probe"))
	s := env.Start(t, "-n", ns, "deploy/probe", "--until", "ready", "--timeout", "2m")
	pod := runningPod(t, ns, "probe")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	log := []string{"listening on :8080", "waiting for the database at db:5432"}
	if err := env.Cluster.SetLogs(ctx, ns, pod.Name, map[string]localcluster.ContainerLog{"app": {Current: log}}); err != nil {
		t.Fatal(err)
	}
	// Event times are whole seconds: a second later, this word is the
	// newest, as the kubelet's next failure would be.
	time.Sleep(1500 * time.Millisecond)
	harness.ProbeFailed(t, env.Clientset(t), &pod, "app", probeMessage)
	r := s.Wait(3 * time.Minute)
	t.Logf("stderr:\n%s", r.Stderr)
	wantVerdict(t, r, 4, "failed")
	wantStderr(t, r, `pod `+ns+`/`+pod.Name+`: container "app" is still not ready past its probe budget of 11s: `+probeMessage,
		"      "+strings.Join(log, "\n      ")+"\n")
	started := pod.Status.ContainerStatuses[0].State.Running.StartedAt.Time
	if after := r.Ended.Sub(started); after < probeBudget-time.Second || after > probeBudget+10*time.Second {
		t.Errorf("failed %s after the container started, want at about its probe budget %s", after.Round(100*time.Millisecond), probeBudget)
	}
}

// The same pod turning ready inside its budget meets the check.
func TestProbeReadyInsideItsBudget(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, probedYAML("probe"))
	s := env.Start(t, "-n", ns, "deploy/probe", "--until", "ready", "--timeout", "2m")
	pod := runningPod(t, ns, "probe")
	harness.ProbeFailed(t, env.Clientset(t), &pod, "app", probeMessage)
	time.Sleep(3 * time.Second)
	harness.SetReady(t, env.Clientset(t), ns, pod.Name)
	r := s.Wait(3 * time.Minute)
	t.Logf("stderr:\n%s", r.Stderr)
	wantVerdict(t, r, 0, "met")
	started := pod.Status.ContainerStatuses[0].State.Running.StartedAt.Time
	if after := r.Ended.Sub(started); after > probeBudget {
		t.Errorf("met %s after the container started, past its budget %s", after, probeBudget)
	}
}

// Without a probe, a pod that never turns ready is waited for until
// --timeout, as before, Unhealthy Events or not; so is a probed one with
// --probe-budget never.
func TestNeverReadyWithoutProbeWaits(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		yaml  string
		flags []string
	}{
		"no probe":     {deploymentYAML("plain", "registry.example/plain:1", 1, state(localcluster.StateNeverReady)), nil},
		"budget never": {probedYAML("plain"), []string{"--probe-budget", "never"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			env.Apply(t, ns, c.yaml)
			pod := runningPod(t, ns, "plain")
			harness.ProbeFailed(t, env.Clientset(t), &pod, "app", probeMessage)
			r := check(t, append([]string{"-n", ns, "deploy/plain", "--until", "ready", "--timeout", "20s"}, c.flags...)...)
			wantVerdict(t, r, 3, "not met")
			if r.Took < 20*time.Second {
				t.Errorf("ended after %s, before --timeout 20s", r.Took)
			}
		})
	}
}

// With --fail-after, a failing probe is held like a --fail-on reason: it
// fails the check once it has held that long past the budget.
func TestProbeHeldByFailAfter(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, probedYAML("probe"))
	s := env.Start(t, "-n", ns, "deploy/probe", "--until", "ready", "--fail-after", "5s", "--timeout", "2m")
	pod := runningPod(t, ns, "probe")
	r := s.Wait(3 * time.Minute)
	t.Logf("stderr:\n%s", r.Stderr)
	wantVerdict(t, r, 4, "failed")
	wantStderr(t, r, `container "app" is still not ready past its probe budget of 11s for 5`, `, more than --fail-after 5s: Readiness probe failed: `)
	started := pod.Status.ContainerStatuses[0].State.Running.StartedAt.Time
	if after := r.Ended.Sub(started); after < probeBudget+5*time.Second-time.Second || after > probeBudget+5*time.Second+10*time.Second {
		t.Errorf("failed %s after the container started, want at about its budget %s + --fail-after 5s", after.Round(100*time.Millisecond), probeBudget)
	}
}
