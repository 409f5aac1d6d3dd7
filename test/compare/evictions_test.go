package compare

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// evictions: pods a kubelet ended for good (node pressure, a graceful node
// shutdown), their status written as a kubelet writes it. A ReplicaSet,
// StatefulSet or DaemonSet replaces such a pod and ignores it, and so does
// kubectl rollout status: podsync names it and does not judge it. A pod
// that no controller replaces (a bare pod, a Job's) still fails the check.
func evictions() []scenario {
	web, slowWeb := deployment("web", 3), deployment("web", 3, "minReadySeconds: 5")
	db := statefulSet("db", 3, "minReadySeconds: 5")
	named := func(what, kind string) []string {
		return []string{"was " + what + " and replaced by its " + kind + " ", "; not judged\n"}
	}
	summarized := func(what string) string {
		return "Replaced: 1 " + what + " pod left behind, replaced, not judged: "
	}

	var out []scenario
	for _, c := range []struct {
		how  harness.Ending
		what string
	}{{harness.Evicted, "evicted"}, {harness.ShutDown, "shut down"}} {
		sc := rollout("Deployment: a pod of its ReplicaSet "+c.what+" and replaced, manifest applied again unchanged", web, func(t *testing.T, ns string) {
			deployed(t, ns, web)
			endPod(t, ns, "web", c.how, isReadyPod)
			waitReadyPods(t, ns, "web", 3)
			apply(t, ns, web)
		})
		sc.stderr = append(named(c.what, "ReplicaSet"), summarized(c.what))
		out = append(out, sc)
	}

	oldSet := rollout("Deployment: an evicted pod left in its old ReplicaSet, new image rolled out", web, func(t *testing.T, ns string) {
		deployed(t, ns, web)
		endPod(t, ns, "web", harness.Evicted, isReadyPod)
		waitReadyPods(t, ns, "web", 3)
		setImage(t, ns, web, 2)
	})
	oldSet.stderr = append(named("evicted", "ReplicaSet"), summarized("evicted"))

	newPod := rollout("Deployment: a ready pod of the new ReplicaSet evicted mid-rollout", slowWeb, updated(slowWeb))
	newPod.during = func(t *testing.T, ns string) {
		endPod(t, ns, "web", harness.Evicted, func(p *corev1.Pod) bool { return isReadyPod(p) && runs(p, image("web", 2)) })
	}
	newPod.stderr = append(named("evicted", "ReplicaSet"), summarized("evicted"))

	set := rollout("StatefulSet: a ready pod at the new revision evicted mid-rollout", db, updated(db))
	set.during = func(t *testing.T, ns string) {
		endPod(t, ns, "db", harness.Evicted, func(p *corev1.Pod) bool { return isReadyPod(p) && runs(p, image("db", 2)) })
	}
	// No stderr line is required: the StatefulSet controller deletes a
	// Failed pod at once, and a run whose worker takes the pod only then
	// sees it being deleted, which is judged the same way (not at all).

	bare := scenario{
		name: "bare pod evicted: no controller replaces it",
		prepare: func(t *testing.T, ns string) {
			env.Apply(t, ns, harness.PodYAML("debug", nil))
			endPod(t, ns, "debug", harness.Evicted, isReadyPod)
		},
		podsync: []string{"pod/debug", "--until", "ready"},
		kubectl: []string{"wait", "--for=condition=Ready", "pod/debug"},
		says:    waits, want: 4,
		stderr: []string{"has phase Failed: Evicted: The node was low on resource: memory."},
	}

	jobPod := job("migrate").in(localcluster.StateNeverReady)
	ofJob := scenario{
		name: "Job pod evicted (restartPolicy Never, backoffLimit 0): the Job does not replace it",
		prepare: func(t *testing.T, ns string) {
			apply(t, ns, jobPod)
			endPod(t, ns, "migrate", harness.Evicted, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		},
		podsync: []string{"-l", "app=migrate", "--until", "ready"},
		kubectl: []string{"wait", "--for=condition=Failed", jobPod.target()},
		want:    4, kubectlMeansFailed: true,
		stderr: []string{"has phase Failed: Evicted: The node was low on resource: memory."},
	}
	return append(out, oldSet, newPod, set, bare, ofJob)
}

// isReadyPod: the pod is ready and not being deleted.
func isReadyPod(p *corev1.Pod) bool { return p.DeletionTimestamp == nil && harness.IsReady(p) }

// runs: the pod's container runs img.
func runs(p *corev1.Pod, img string) bool { return p.Spec.Containers[0].Image == img }

// endPod waits for a pod labelled app=APP that satisfies ok, and ends it
// as a kubelet does (harness.EndPod).
func endPod(t *testing.T, ns, app string, how harness.Ending, ok func(*corev1.Pod) bool) {
	t.Helper()
	var name string
	harness.Eventually(t, settle, harness.Text("a pod of "+app+" to "+strings.ToLower(how.Reason)), func() bool {
		for _, p := range pods(t, ns, app) {
			if ok(&p) {
				name = p.Name
				return true
			}
		}
		return false
	})
	harness.EndPod(t, env.Clientset(t), ns, name, how)
	t.Logf("pod %s ended: %s", name, how.Reason)
}

// waitReadyPods waits until n pods labelled app=APP are ready, whatever
// else is left (a pod left behind in phase Failed).
func waitReadyPods(t *testing.T, ns, app string, n int) {
	t.Helper()
	harness.Eventually(t, settle, harness.Text("ready pods of "+app), func() bool {
		ready := 0
		for _, p := range pods(t, ns, app) {
			if isReadyPod(&p) {
				ready++
			}
		}
		return ready == n
	})
}
