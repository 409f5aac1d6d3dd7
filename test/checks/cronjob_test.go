package checks

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A CronJob target is a built-in kind: met once it exists, as kstatus
// holds a CronJob, with a note while it is suspended; its pods are those
// of its Jobs, each found through the Job that controls it, and a Job of
// its own in the same namespace is not the CronJob's.
func TestTargetCronJob(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, cronJobYAML("nightly"))
	env.Kubectl(t, "create", "job", "-n", ns, "nightly-manual", "--from=cronjob/nightly")
	env.Apply(t, ns, jobYAML("other", nil))
	succeeded := func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded }
	waitPods(t, ns, "app=nightly", 1, "Succeeded", succeeded)
	waitPods(t, ns, "app=other", 1, "Succeeded", succeeded)

	r := check(t, "-n", ns, "cj/nightly", "--until", "healthy", "--timeout", "2m")
	wantVerdict(t, r, 0, "met")
	wantStderr(t, r, "Targets:  cronjob/nightly: suspended: exists, 0 active jobs in ",
		"podsync: cronjob/nightly is suspended: it starts no Job until spec.suspend is false",
		"Pods:     1 matched (Completed 1)")
	wantLines(t, r.Stdout, `^SYNC\s+nightly-manual-\S+\s+0/1\s+Completed\s`, 1)
	wantLines(t, r.Stdout, `other-`, 0)
}

// cronJobYAML is a suspended CronJob NAME whose Jobs run one pod labelled
// app=NAME; its schedule is once a year, so only `kubectl create job
// --from` starts its Jobs.
func cronJobYAML(name string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: CronJob
metadata:
  name: %[1]s
spec:
  schedule: "0 3 1 1 *"
  suspend: true
  jobTemplate:
    spec:
      backoffLimit: 0
      template:
        metadata:
          labels: {app: %[1]s}
        spec:
          restartPolicy: Never
          containers:
          - name: app
            image: registry.example/batch:1
`, name)
}
