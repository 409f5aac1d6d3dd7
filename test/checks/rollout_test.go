package checks

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// wantOnlyCurrentPods checks through the API, after the verdict, that every
// pod of the Deployment that is not being deleted belongs to the ReplicaSet
// running image and is ready, and that there are want of them; and that
// podsync reported each of them running and ready.
func wantOnlyCurrentPods(t *testing.T, ns, deploy, image string, want int, stdout string) {
	t.Helper()
	rs := currentReplicaSet(t, ns, deploy, image)
	hash := rs.Labels["pod-template-hash"]
	live := 0
	for _, p := range pods(t, ns, "app="+deploy) {
		if p.DeletionTimestamp != nil {
			continue
		}
		live++
		if p.Labels["pod-template-hash"] != hash || !harness.IsReady(&p) {
			t.Errorf("after the verdict, pod %s (hash %s, ready %v) is not a ready pod of the current ReplicaSet %s",
				p.Name, p.Labels["pod-template-hash"], harness.IsReady(&p), rs.Name)
		}
		wantLines(t, stdout, `^(SYNC|ADD|UPDATE)\s+`+p.Name+`\s+1/1\s+Running\s`, 1)
	}
	if live != want {
		t.Errorf("after the verdict %d pods of %s are not being deleted, want %d", live, deploy, want)
	}
}

// A rolling update started just before the check: it exits 0 only once the
// old pods are replaced by ready pods of the new ReplicaSet, for --until
// healthy and for --until ready.
func TestRolloutWaitsForTheNewPods(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, deploymentYAML("web", "registry.example/web:1", 3, nil))
	rolledOut(t, ns, "web")
	for i, until := range []string{"healthy", "ready"} {
		image := fmt.Sprintf("registry.example/web:%d", i+2)
		t.Run(until, func(t *testing.T) {
			env.Kubectl(t, "set", "image", "-n", ns, "deployment/web", "app="+image)
			r := check(t, "-n", ns, "-l", "app=web", "--until", until, "--timeout", "4m")
			wantVerdict(t, r, 0, "met")
			wantTook(t, r, 4*time.Minute)
			wantStderr(t, r, "Reason:   all 3 matching pods satisfy "+until, "Pods:     ", "Events:   SYNC ")
			wantOnlyCurrentPods(t, ns, "web", image, 3, r.Stdout)
			// The old pods were seen leaving.
			wantLines(t, r.Stdout, `^(UPDATE|GONE)\s+web-\S+\s+\S+\s+Terminating\s`, 1)
		})
	}
}

// Right after `kubectl set image` the new ReplicaSet may have no pod yet,
// and every matching pod is an old, ready one. A paused Deployment holds
// that moment still: the check must not pass on the old pods, and passes
// once the rollout, resumed, has replaced them.
func TestRolloutNotStartedYetIsNotMet(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, deploymentYAML("api", "registry.example/api:1", 2, nil))
	rolledOut(t, ns, "api")
	env.Kubectl(t, "rollout", "pause", "-n", ns, "deployment/api")
	env.Kubectl(t, "set", "image", "-n", ns, "deployment/api", "app=registry.example/api:2")

	r := check(t, "-n", ns, "-l", "app=api", "--until", "ready", "--once")
	wantVerdict(t, r, 3, "not met")
	wantTook(t, r, time.Minute)
	wantLines(t, r.Stdout, `^SYNC\s+api-\S+\s+1/1\s+Running\s`, 2)
	wantStderr(t, r,
		"Reason:   2 matching pods satisfy ready, but the rollout of 1 Deployment is not confirmed yet: "+ns+"/api: no ReplicaSet has its current pod template yet: the Deployment is paused",
		"Unmet:  rollout: want pods of the current ReplicaSet of Deployment api, got pod of ReplicaSet api-")

	s := env.Start(t, "-n", ns, "-l", "app=api", "--until", "ready", "--timeout", "4m")
	s.WaitLines(`^SYNC\s+api-\S+\s+1/1\s+Running\s`, 2, time.Minute)
	// A wrong verdict on the old pods comes within milliseconds of the
	// initial list; a right one never comes while the rollout is paused.
	time.Sleep(5 * time.Second)
	if s.Exited() {
		t.Fatalf("the check ended while the rollout was paused\n%s", s.Dump())
	}
	resumed := time.Now()
	env.Kubectl(t, "rollout", "resume", "-n", ns, "deployment/api")
	r = s.Wait(runLimit)
	t.Logf("verdict %s after the rollout was resumed (exit %d)", time.Since(resumed).Round(time.Millisecond), r.Code)
	wantVerdict(t, r, 0, "met")
	wantOnlyCurrentPods(t, ns, "api", "registry.example/api:2", 2, r.Stdout)
	wantLines(t, r.Stdout, `^ADD\s+api-`, 2)
}

// A user who may watch pods but not read Deployments still gets a verdict:
// the rollout cannot be confirmed, which is said once, and the pods are
// judged alone.
func TestRolloutUnverifiableJudgesPodsAlone(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, deploymentYAML("shop", "registry.example/shop:1", 2, nil))
	env.Apply(t, ns, `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: pods-only
rules:
- apiGroups: [""]
  resources: [pods, events]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: pods-only
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: pods-only
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: ci-pods-only
`)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.Cluster.WriteUserKubeconfig(kubeconfig, "ci-pods-only"); err != nil {
		t.Fatal(err)
	}
	r := env.PodsyncEnv(t, runLimit, []string{"KUBECONFIG=" + kubeconfig}, "-n", ns, "-l", "app=shop", "--until", "ready", "--timeout", "4m")
	t.Logf("exit %d after %s", r.Code, r.Took.Round(time.Millisecond))
	wantVerdict(t, r, 0, "met")
	wantStderr(t, r, "warning: cannot confirm the rollout of Deployment "+ns+"/shop, judging its pods alone: ",
		`deployments.apps "shop" is forbidden: User "ci-pods-only" cannot get resource "deployments"`)
	wantLines(t, r.Stdout, `^(SYNC|ADD|UPDATE)\s+shop-\S+\s+1/1\s+Running\s`, 2)
}
