package e2e

// Fidelity: for pods in many states, podsync's table rows without EVENT
// and CHANGES are `kubectl get pods` (and -o wide), cell by cell.

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// statePods are pods that a kubelet (kwok here) leaves in the state named
// in each comment.
const statePods = `apiVersion: v1
kind: Pod
metadata: {name: running-ready}
spec:
  containers: [{name: app, image: registry.example/app:1}]
---
# Pending: no node has this label.
apiVersion: v1
kind: Pod
metadata: {name: pending}
spec:
  nodeSelector: {podsync.test/no-such-node: "true"}
  containers: [{name: app, image: registry.example/app:1}]
---
# Running, READY 0/1.
apiVersion: v1
kind: Pod
metadata: {name: not-ready, annotations: {podsync.test/state: never-ready}}
spec:
  containers: [{name: app, image: registry.example/app:1}]
---
# Init:0/1.
apiVersion: v1
kind: Pod
metadata: {name: init-running, annotations: {podsync.test/state: init-running}}
spec:
  initContainers: [{name: init, image: registry.example/init:1}]
  containers: [{name: app, image: registry.example/app:1}]
---
# CrashLoopBackOff with growing RESTARTS.
apiVersion: v1
kind: Pod
metadata: {name: crash-loop, annotations: {podsync.test/state: crashloop}}
spec:
  containers: [{name: app, image: registry.example/app:1}]
---
# Error: the container exited 1 and the pod failed.
apiVersion: v1
kind: Pod
metadata: {name: failed, annotations: {podsync.test/state: error}}
spec:
  restartPolicy: Never
  containers: [{name: app, image: registry.example/app:1}]
---
# ImagePullBackOff.
apiVersion: v1
kind: Pod
metadata: {name: image-pull, annotations: {podsync.test/state: imagepullbackoff}}
spec:
  containers: [{name: app, image: registry.example/app:1}]
---
# SchedulingGated.
apiVersion: v1
kind: Pod
metadata: {name: gated}
spec:
  schedulingGates: [{name: podsync.test/gate}]
  containers: [{name: app, image: registry.example/app:1}]
---
# A readiness gate: READINESS GATES N/1 with -o wide (kwok sets it).
apiVersion: v1
kind: Pod
metadata: {name: readiness-gate}
spec:
  readinessGates: [{conditionType: podsync.test/ready}]
  containers: [{name: app, image: registry.example/app:1}]
---
# Terminating once deleted: a finalizer holds it.
apiVersion: v1
kind: Pod
metadata: {name: terminating, finalizers: [podsync.test/hold]}
spec:
  containers: [{name: app, image: registry.example/app:1}]
`

// wantStates is the STATUS each pod must show when the tables are compared
// (the Job's pod, which kwok completes, is matched by prefix).
var wantStates = map[string]string{
	"running-ready": "Running",
	"pending":       "Pending",
	"not-ready":     "Running",
	"init-running":  "Init:0/1",
	"crash-loop":    "CrashLoopBackOff",
	"failed":        "Error",
	"job-":          "Completed",
	"image-pull":    "ImagePullBackOff",
	"gated":         "SchedulingGated",
	"terminating":   "Terminating",
}

func TestTableFidelity(t *testing.T) {
	ns := env.Namespace(t)
	env.Apply(t, ns, statePods)
	t.Cleanup(func() { releaseFinalizers(ns, "terminating") })
	env.Kubectl(t, "create", "job", "-n", ns, "job", "--image=registry.example/job:1")
	waitStatus(t, ns, "terminating", "1/1", "Running")
	env.Kubectl(t, "delete", "pod", "-n", ns, "terminating", "--wait=false")
	harness.Eventually(t, podLimit, func() string {
		return "the pods to reach their states:\n" + env.Kubectl(t, "get", "pods", "-n", ns)
	}, func() bool {
		return statesReached(table(t, env.KubectlOut(t, "get", "pods", "-n", ns))) == ""
	})
	if ready, _ := podStatus(t, ns, "not-ready"); ready != "0/1" {
		t.Fatalf("not-ready shows READY %s", ready)
	}

	for _, wide := range []bool{false, true} {
		t.Run(fmt.Sprintf("wide=%v", wide), func(t *testing.T) {
			args := []string{"-n", ns}
			if wide {
				args = append(args, "-o", "wide")
			}
			got := compareUntilEqual(t, args).ByKey("NAME")
			if wide {
				gates := got["readiness-gate"][len(got["readiness-gate"])-2]
				if !strings.HasSuffix(gates, "/1") {
					t.Errorf("readiness-gate: READINESS GATES %q, want N/1", gates)
				}
			}
		})
	}
}

// statesReached says which pods are not (yet) in the state wantStates
// names, or "" when all are; the crash loop must have restarted.
func statesReached(tb harness.Table) string {
	var missing []string
	found := map[string]bool{}
	for _, r := range tb.Rows {
		name, status, restarts := r[tb.Column("NAME")], r[tb.Column("STATUS")], r[tb.Column("RESTARTS")]
		key := name
		if strings.HasPrefix(name, "job-") {
			key = "job-"
		}
		want, ok := wantStates[key]
		if !ok {
			continue
		}
		found[key] = true
		n, _ := strconv.Atoi(strings.Fields(restarts + " x")[0])
		if status != want || (key == "crash-loop" && n < 1) {
			missing = append(missing, fmt.Sprintf("%s is %s (restarts %s), want %s", name, status, restarts, want))
		}
	}
	for key := range wantStates {
		if !found[key] {
			missing = append(missing, key+" is not listed")
		}
	}
	return strings.Join(missing, "; ")
}

// compareUntilEqual compares `kubectl get pods ARGS` with `kubectl podsync
// ARGS --once` taken right after it. The crash loop moves every few
// seconds, so a comparison in which a pod changed between the two
// commands is taken again, a few times.
func compareUntilEqual(t *testing.T, args []string) harness.Table {
	t.Helper()
	const attempts = 15
	var last string
	for i := 1; i <= attempts; i++ {
		kube := table(t, env.KubectlOut(t, append([]string{"get", "pods"}, args...)...))
		start := time.Now()
		r := once(t, args...)
		took := time.Since(start)
		got := table(t, r.Stdout)
		if got.Header[0] != "EVENT" || got.Header[len(got.Header)-1] != "CHANGES" {
			t.Fatalf("header %v: want EVENT first and CHANGES last", got.Header)
		}
		for _, row := range got.Rows {
			if row[0] != "SYNC" || row[len(row)-1] != "" {
				t.Fatalf("--once row %v: want SYNC and no CHANGES", row)
			}
		}
		diff := tableDiff(kube, got.Without("EVENT", "CHANGES"), []string{"NAME"})
		moving := statesReached(kube)
		if diff == "" && moving == "" {
			t.Logf("attempt %d: %d rows equal cell by cell (podsync --once took %s)", i, len(kube.Rows), took.Round(time.Millisecond))
			return got
		}
		last = diff + "\n" + moving
		t.Logf("attempt %d: not equal yet (a pod moved?): %s", i, strings.ReplaceAll(last, "\n", "; "))
	}
	t.Fatalf("after %d attempts, podsync's rows still differ from kubectl get's:\n%s", attempts, last)
	return harness.Table{}
}
