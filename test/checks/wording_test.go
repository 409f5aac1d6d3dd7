package checks

import (
	"strings"
	"testing"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// An Indexed Job with a per-index limit retries each index on its own:
// the note names that limit, not the backoffLimit the controller does
// not apply to it.
func TestIndexedJobSaysItsPerIndexLimit(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	job := strings.Replace(jobYAML("indexed", state(localcluster.StateError)), "  backoffLimit: 0\n",
		"  completionMode: Indexed\n  completions: 3\n  parallelism: 1\n  backoffLimitPerIndex: 1\n  maxFailedIndexes: 2\n", 1)
	env.Apply(t, ns, job)
	r := check(t, "-n", ns, "job/indexed", "--until", "healthy", "--timeout", "4m")
	wantVerdict(t, r, 4, "failed")
	wantStderr(t, r, "failed so far; the Job retries each index up to 1 time (backoffLimitPerIndex 1, maxFailedIndexes 2), so the check goes on")
	if strings.Contains(r.Stderr, "backoffLimit 2147483647") {
		t.Errorf("the note names the backoffLimit the per-index limit replaces\n%s", r)
	}
}

// A work-queue Job (parallelism, no completions) completes with every pod
// succeeded: the summary says so in words, with COMPLETIONS as kubectl
// prints it, instead of "3/1 succeeded".
func TestWorkQueueJobSaysItsCompletionsAsKubectl(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	job := strings.Replace(jobYAML("queue", nil), "  backoffLimit: 0\n", "  backoffLimit: 0\n  parallelism: 3\n", 1)
	env.Apply(t, ns, job)
	r := check(t, "-n", ns, "job/queue", "--until", "healthy", "--timeout", "4m")
	wantVerdict(t, r, 0, "met")
	cell := strings.TrimSpace(env.KubectlOut(t, "get", "job", "queue", "-n", ns, "-o", "custom-columns=C:.status.succeeded", "--no-headers"))
	table := env.KubectlOut(t, "get", "job", "queue", "-n", ns, "--no-headers")
	want := "complete: a work queue of 3 pods, " + cell + " succeeded (COMPLETIONS " + cell + "/1 of 3)"
	wantStderr(t, r, "Targets:  job/queue: "+want)
	if !strings.Contains(table, cell+"/1 of 3") {
		t.Errorf("kubectl get job shows %q, want its COMPLETIONS %s/1 of 3", table, cell)
	}
}

// A pod the scheduler cannot place: the one-line reason says so first,
// with the scheduler's message, and the explanation shows PodScheduled.
func TestUnschedulableReasonSaysScheduling(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	pod := strings.Replace(harness.PodYAML("stuck", nil), "spec:\n", "spec:\n  nodeSelector: {disk: none-such}\n", 1)
	env.Apply(t, ns, pod)
	r := check(t, "-n", ns, "stuck", "--until", "ready", "--timeout", "15s", "-o", "json")
	wantVerdict(t, r, 3, "not met")
	wantStderr(t, r, "Reason:   pod "+ns+"/stuck cannot be scheduled: 0/",
		"; 1 of 1 matching pods do not satisfy ready\n",
		"  Scheduling: PodScheduled=False (Unschedulable: 0/")
	if !strings.Contains(r.Stderr, `"unschedulable":"0/`) {
		t.Errorf("the JSON summary has no unschedulable message\n%s", r)
	}
}
