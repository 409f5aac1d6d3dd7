package checks

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A Job that succeeds: --until succeeded waits for its pod to complete.
// Once it has, --until healthy is met by the Completed pod, which is never
// Ready (the kubectl wait --for=condition=Ready trap), while --until ready
// is not.
func TestJobSucceeds(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	s := startWatching(t, "-n", ns, "-l", "app=report", "--until", "succeeded", "--timeout", "4m")
	created := time.Now()
	env.Apply(t, ns, jobYAML("report", nil))
	r := s.Wait(runLimit)
	t.Logf("--until succeeded: exit %d, %s after the Job was created", r.Code, time.Since(created).Round(time.Millisecond))
	wantVerdict(t, r, 0, "met")
	wantLines(t, r.Stdout, `^ADD\s+report-\S+\s`, 1)
	wantLines(t, r.Stdout, `^UPDATE\s+report-\S+\s+0/1\s+Completed\s`, 1)
	wantStderr(t, r, "Reason:   all 1 matching pods satisfy succeeded", "Pods:     1 matched (Completed 1)")
	list := pods(t, ns, "app=report")
	if len(list) != 1 || list[0].Status.Phase != corev1.PodSucceeded {
		t.Fatalf("want one Succeeded pod, got %d pods", len(list))
	}
	wantCompletedUnready(t, ns, list[0].Name)

	r = check(t, "-n", ns, "-l", "app=report", "--until", "healthy", "--timeout", "2m")
	wantVerdict(t, r, 0, "met")
	wantTook(t, r, time.Minute)
	wantLines(t, r.Stdout, `^SYNC\s+report-\S+\s+0/1\s+Completed\s`, 1)
	wantStderr(t, r, "Reason:   all 1 matching pods satisfy healthy")

	r = check(t, "-n", ns, "-l", "app=report", "--until", "ready", "--once")
	wantVerdict(t, r, 3, "not met")
	wantStderr(t, r, "Phase:  Succeeded", "Unmet:  ready: want Ready=True, got Ready=False",
		"Container app: terminated (Completed), exit code 0")
}

// A Job whose pod fails: --until succeeded exits 4 at once on the Failed
// phase (a default --fail-on reason) instead of waiting for --timeout.
func TestJobFails(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	s := startWatching(t, "-n", ns, "-l", "app=broken", "--until", "succeeded", "--timeout", "4m")
	created := time.Now()
	env.Apply(t, ns, jobYAML("broken", state("error")))
	r := s.Wait(runLimit)
	t.Logf("exit %d, %s after the Job was created", r.Code, time.Since(created).Round(time.Millisecond))
	wantVerdict(t, r, 4, "failed")
	wantTook(t, r, 2*time.Minute)
	wantLines(t, r.Stdout, `^UPDATE\s+broken-\S+\s+0/1\s+Error\s`, 1)
	wantStderr(t, r, "has phase Failed: container \"app\" terminated with exit code 1 (Error)",
		"Phase:  Failed", "Container app: terminated (Error), exit code 1")
	if !strings.Contains(r.Stderr, "Events (warnings first, newest first):") {
		t.Errorf("the failed pod's events are not shown\n%s", r)
	}
}
