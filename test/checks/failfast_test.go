package checks

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// A crash-looping container fails the check within seconds, naming the
// container and CrashLoopBackOff, and the summary shows how it crashed.
func TestCrashLoopFailsFast(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, deploymentYAML("crash", "registry.example/crash:1", 1, state("crashloop")))
	r := check(t, "-n", ns, "-l", "app=crash", "--until", "ready", "--timeout", "4m")
	wantVerdict(t, r, 4, "failed")
	wantTook(t, r, 90*time.Second)
	wantLines(t, r.Stdout, `^UPDATE\s+crash-\S+\s+0/1\s+CrashLoopBackOff\s`, 1)
	wantStderr(t, r,
		`container "app" is CrashLoopBackOff: back-off 4s restarting failed container=app`,
		"Pods:     1 matched (CrashLoopBackOff 1)",
		"Container app: waiting (CrashLoopBackOff: back-off 4s restarting failed container=app",
		"last terminated (Error), exit code 1",
		"Events (warnings first, newest first):", "Normal  Scheduled  x1  Successfully assigned "+ns+"/crash-",
		// The crash's log, read as the check failed.
		"      "+localcluster.CrashLoopLastLine+"\n")
}

// A container whose image cannot be pulled fails the check at once.
func TestImagePullFailsFast(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, harness.PodYAML("pull", state("imagepullbackoff")))
	r := check(t, "-n", ns, "pull", "--until", "ready", "--timeout", "4m")
	wantVerdict(t, r, 4, "failed")
	wantTook(t, r, 90*time.Second)
	// ErrImagePull comes first, ImagePullBackOff after it: either fails.
	if !strings.Contains(r.Stderr, `container "app" is ErrImagePull: failed to pull and unpack image`) &&
		!strings.Contains(r.Stderr, `container "app" is ImagePullBackOff`) {
		t.Errorf("stderr does not name the image pull failure\n%s", r)
	}
	wantStderr(t, r, "Phase:  Pending", "Container app: waiting (", "Normal  Scheduled  x1  Successfully assigned "+ns+"/pull ")
	wantLines(t, r.Stdout, `^(SYNC|UPDATE)\s+pull\s+0/1\s+(ErrImagePull|ImagePullBackOff)\s`, 1)
}

// --fail-on none: a crash loop no longer ends the check; it runs to
// --timeout and exits 3, explaining the crash loop. A custom --fail-on list
// fails on its own reasons only.
func TestFailOnNoneAndCustom(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, harness.PodYAML("loop", state("crashloop")))
	waitPods(t, ns, "app=loop", 1, "crash-looping", func(p *corev1.Pod) bool { return restarts(p) >= 1 })

	r := check(t, "-n", ns, "loop", "--until", "ready", "--fail-on", "none", "--timeout", "12s")
	wantVerdict(t, r, 3, "not met")
	if r.Took < 12*time.Second || r.Took > 12*time.Second+time.Minute {
		t.Errorf("verdict after %s, want at --timeout 12s", r.Took)
	}
	wantStderr(t, r, "Reason:   1 of 1 matching pods do not satisfy ready", "Pod "+ns+"/loop is not satisfied:",
		"Unmet:  ready: want Ready=True, got Ready=False (ContainersNotReady: containers with unready status: [app])",
		"Container app: ", "; last terminated (Error), exit code 1")
	wantLines(t, r.Stdout, `^UPDATE\s+loop\s+0/1\s+CrashLoopBackOff\s`, 1)

	// Not one of the pod's reasons: no failure, exit 3 at --timeout.
	r = check(t, "-n", ns, "loop", "--until", "ready", "--fail-on", "ImagePullBackOff,OOMKilled", "--timeout", "12s")
	wantVerdict(t, r, 3, "not met")
	// Error, the reason of each crash, is on the list: exit 4 on it.
	r = check(t, "-n", ns, "loop", "--until", "ready", "--fail-on", "error", "--timeout", "2m")
	wantVerdict(t, r, 4, "failed")
	wantTook(t, r, 90*time.Second)
	wantStderr(t, r, `pod `+ns+`/loop: container "app" is Error`)
}

// --max-restarts counts the restarts made while the check runs: a pod that
// restarted several times before is not failed for those, only once it
// restarts more than N times more.
func TestMaxRestarts(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, harness.PodYAML("flaky", state("crashloop")))
	waitPods(t, ns, "app=flaky", 1, "restarted 3 times", func(p *corev1.Pod) bool { return restarts(p) >= 3 })
	before := restarts(&pods(t, ns, "app=flaky")[0])

	r := check(t, "-n", ns, "flaky", "--until", "ready", "--fail-on", "none", "--max-restarts", "1", "--timeout", "4m")
	wantVerdict(t, r, 4, "failed")
	wantTook(t, r, 2*time.Minute)
	wantStderr(t, r, fmt.Sprintf(`pod %s/flaky: container "app" restarted 2 times while the check ran, more than --max-restarts 1`, ns))
	after := restarts(&pods(t, ns, "app=flaky")[0])
	t.Logf("restarts: %d before the check, %d after it", before, after)
	if after < before+2 {
		t.Errorf("the check failed after %d new restarts, want at least 2", after-before)
	}
	// Two more crashes take two back-offs of about 4 s each.
	if r.Took < 5*time.Second {
		t.Errorf("verdict after %s: too soon for two new restarts", r.Took)
	}
}
