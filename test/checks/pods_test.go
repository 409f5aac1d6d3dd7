package checks

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// The check starts before any matching pod exists: it waits for them, by
// selector and by name, instead of failing at once.
func TestPodsThatDoNotExistYet(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	bySelector := startWatching(t, "-n", ns, "-l", "app=late", "--until", "ready", "--timeout", "4m")
	byName := startWatching(t, "-n", ns, "solo", "--until", "ready", "--timeout", "4m")
	// Both have judged their empty initial list and are watching; a check
	// that failed on no pods would have ended by now.
	time.Sleep(2 * time.Second)
	for _, s := range []*harness.Stream{bySelector, byName} {
		if s.Exited() {
			t.Fatalf("the check ended before any pod existed\n%s", s.Dump())
		}
	}
	created := time.Now()
	env.Apply(t, ns, deploymentYAML("late", "registry.example/late:1", 2, nil))
	env.Apply(t, ns, harness.PodYAML("solo", nil))

	r := bySelector.Wait(runLimit)
	t.Logf("-l app=late: exit %d, %s after the Deployment was created", r.Code, time.Since(created).Round(time.Millisecond))
	wantVerdict(t, r, 0, "met")
	wantLines(t, r.Stdout, `^ADD\s+late-\S+\s+0/1\s`, 2)
	wantLines(t, r.Stdout, `^UPDATE\s+late-\S+\s+1/1\s+Running\s`, 2)
	if harness.CountLines(r.Stdout, `^SYNC\s`) != 0 {
		t.Errorf("pods created after the check started were reported as SYNC\n%s", r)
	}
	wantStderr(t, r, "Reason:   all 2 matching pods satisfy ready", "Events:   SYNC 0, ADD 2, ")

	r = byName.Wait(runLimit)
	t.Logf("solo: exit %d, %s after the pod was created", r.Code, time.Since(created).Round(time.Millisecond))
	wantVerdict(t, r, 0, "met")
	wantLines(t, r.Stdout, `^ADD\s+solo\s`, 1)
	wantLines(t, r.Stdout, `^UPDATE\s+solo\s+1/1\s+Running\s`, 1)
	wantStderr(t, r, "Reason:   all 1 matching pods satisfy ready", "Pods:     1 matched (Running 1)")
}

// --min-pods 3 with two ready pods is not met until the third one is.
func TestMinPods(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	for _, name := range []string{"trio-a", "trio-b"} {
		env.Apply(t, ns, strings.Replace(harness.PodYAML(name, nil), "app: "+name, "app: trio", 1))
	}
	waitPods(t, ns, "app=trio", 2, "ready", harness.IsReady)

	r := check(t, "-n", ns, "-l", "app=trio", "--until", "ready", "--min-pods", "3", "--once")
	wantVerdict(t, r, 3, "not met")
	wantStderr(t, r, "Reason:   2 matching pods, want at least 3 (ready)", "Pods:     2 matched (Running 2)")
	wantLines(t, r.Stdout, `^SYNC\s+trio-[ab]\s+1/1\s+Running\s`, 2)

	s := env.Start(t, "-n", ns, "-l", "app=trio", "--until", "ready", "--min-pods", "3", "--timeout", "4m")
	s.WaitLines(`^SYNC\s+trio-`, 2, time.Minute)
	time.Sleep(3 * time.Second)
	if s.Exited() {
		t.Fatalf("the check ended with 2 of 3 pods\n%s", s.Dump())
	}
	added := time.Now()
	env.Apply(t, ns, strings.Replace(harness.PodYAML("trio-c", nil), "app: trio-c", "app: trio", 1))
	r = s.Wait(runLimit)
	t.Logf("exit %d, %s after the third pod was created", r.Code, time.Since(added).Round(time.Millisecond))
	wantVerdict(t, r, 0, "met")
	wantLines(t, r.Stdout, `^UPDATE\s+trio-c\s+1/1\s+Running\s`, 1)
	wantStderr(t, r, "Reason:   all 3 matching pods satisfy ready")
}

// Scaling a Deployment to zero: --until gone (0 pods required by default)
// ends once the last pod is deleted, not when it starts terminating.
func TestScaleToZeroUntilGone(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, deploymentYAML("batch", "registry.example/batch:1", 2, nil))
	rolledOut(t, ns, "batch")
	s := env.Start(t, "-n", ns, "-l", "app=batch", "--until", "gone", "--timeout", "4m")
	s.WaitLines(`^SYNC\s+batch-`, 2, time.Minute)
	scaled := time.Now()
	env.Kubectl(t, "scale", "-n", ns, "deployment/batch", "--replicas=0")
	r := s.Wait(runLimit)
	t.Logf("exit %d, %s after scaling to zero", r.Code, time.Since(scaled).Round(time.Millisecond))
	wantVerdict(t, r, 0, "met")
	wantLines(t, r.Stdout, `^GONE\s+batch-`, 2)
	wantStderr(t, r, "Reason:   no matching pod is left", "Pods:     0 matched", ", GONE 2")
	if left := pods(t, ns, "app=batch"); len(left) != 0 {
		t.Errorf("after the verdict %d pods are left", len(left))
	}
	// On the state reached, --once agrees at once.
	r = check(t, "-n", ns, "-l", "app=batch", "--until", "gone", "--once")
	wantVerdict(t, r, 0, "met")
	if r.Stdout != "" {
		t.Errorf("stdout with no pods: %q", r.Stdout)
	}
}

// --once judges the current state once: 0 when met, 3 when not, with the
// state printed as SYNC messages either way.
func TestOnce(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, harness.PodYAML("fine", nil))
	env.Apply(t, ns, harness.PodYAML("stuck", state("never-ready")))
	waitPods(t, ns, "app=fine", 1, "ready", harness.IsReady)
	waitPods(t, ns, "app=stuck", 1, "running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })

	r := check(t, "-n", ns, "fine", "--until", "ready", "--once")
	wantVerdict(t, r, 0, "met")
	wantTook(t, r, time.Minute)
	wantLines(t, r.Stdout, `^SYNC\s+fine\s+1/1\s+Running\s`, 1)
	wantStderr(t, r, "Reason:   all 1 matching pods satisfy ready")

	r = check(t, "-n", ns, "--until", "running,ready", "--once")
	wantVerdict(t, r, 3, "not met")
	wantTook(t, r, time.Minute)
	wantLines(t, r.Stdout, `^SYNC\s+stuck\s+0/1\s+Running\s`, 1)
	wantStderr(t, r, "Reason:   1 of 2 matching pods do not satisfy running,ready",
		"Pod "+ns+"/stuck is not satisfied:", "Unmet:  ready: want Ready=True, got Ready=False")
	if strings.Contains(r.Stderr, "Pod "+ns+"/fine is not satisfied") {
		t.Errorf("the satisfied pod is explained too\n%s", r)
	}

	// Without --until, --once prints the state and exits 0, with no
	// summary, as kubectl get does.
	r = check(t, "-n", ns, "--once")
	if r.Code != 0 || r.Stderr != "" {
		t.Errorf("--once without --until: want exit 0 and nothing on stderr\n%s", r)
	}
	wantLines(t, r.Stdout, `^SYNC\s+(fine|stuck)\s`, 2)
}
