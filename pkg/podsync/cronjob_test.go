package podsync_test

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
)

// A CronJob target's pods are found as its row in the kinds table says:
// through the Jobs it controls (its Via), each pod's controller being a
// Job. The pod of a Job of its own is not the CronJob's.
func TestCronJobPodsThroughItsJobs(t *testing.T) {
	yes := true
	cron := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "nightly", UID: "uid-nightly"}}
	job := func(name string, owner *metav1.OwnerReference) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID("uid-" + name)}}
		if owner != nil {
			j.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		return j
	}
	ofCron := job("nightly-1", &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "CronJob", Name: "nightly", UID: cron.UID, Controller: &yes})
	alone := job("other", nil)
	pods := newSim(false)
	for _, j := range []*batchv1.Job{ofCron, alone} {
		p := newSimPod("a", j.Name+"-x", 1, runningReady, "")
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID, Controller: &yes}}
		pods.put(p)
	}
	tg := check.Target{Kind: check.TargetCronJob, Namespace: "a", Name: "nightly"}
	r := startTargets(t, pods, "ready", []check.Target{tg}, cron, ofCron, alone)
	out := r.outcome(t)
	if out.Verdict != podsync.Met {
		t.Fatalf("verdict %v, want met\n%s", out.Verdict, r.stderr)
	}
	if got, want := r.stdout.String(), "pod/nightly-1-x synced\n"; got != want {
		t.Errorf("stdout %q, want %q\n%s", got, want, r.stderr)
	}
}
