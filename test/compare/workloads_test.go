package compare

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// settle bounds how long a scenario's preparation waits for the cluster.
const settle = 3 * time.Minute

// workload is a Deployment, StatefulSet, DaemonSet or Job whose pods are
// labelled app=NAME and run one container "app".
type workload struct {
	kind, name, image string
	// replicas is spec.replicas; 0 leaves it out (DaemonSet, Job).
	replicas int
	// spec holds lines put first in the spec, as `key: value`.
	spec []string
	// state puts the pods into one of kwok's broken states (localcluster).
	state string
	// finalizer holds each pod for a while after its deletion.
	finalizer bool
	// readiness is the container's readinessProbe, as a YAML flow map.
	readiness string
}

func deployment(name string, replicas int, spec ...string) workload {
	return workload{kind: "Deployment", name: name, image: image(name, 1), replicas: replicas, spec: spec}
}

func statefulSet(name string, replicas int, spec ...string) workload {
	return workload{kind: "StatefulSet", name: name, image: image(name, 1), replicas: replicas, spec: spec}
}

func daemonSet(name string, spec ...string) workload {
	return workload{kind: "DaemonSet", name: name, image: image(name, 1), spec: spec}
}

// job is a Job of one pod that is not retried.
func job(name string, spec ...string) workload {
	return workload{kind: "Job", name: name, image: image(name, 1), spec: append([]string{"backoffLimit: 0"}, spec...)}
}

func image(name string, version int) string {
	return fmt.Sprintf("registry.example/%s:%d", name, version)
}

func (w workload) in(st string) workload { w.state = st; return w }

func (w workload) at(version int) workload { w.image = image(w.name, version); return w }

func (w workload) held() workload { w.finalizer = true; return w }

func (w workload) probed(probe string) workload { w.readiness = probe; return w }

func (w workload) yaml() string {
	api, selector, restart := "apps/v1", fmt.Sprintf("  selector:\n    matchLabels: {app: %s}\n", w.name), ""
	if w.kind == "Job" {
		api, selector, restart = "batch/v1", "", "      restartPolicy: Never\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\nspec:\n", api, w.kind, w.name)
	if w.replicas > 0 {
		fmt.Fprintf(&b, "  replicas: %d\n", w.replicas)
	}
	for _, l := range w.spec {
		b.WriteString("  " + l + "\n")
	}
	b.WriteString(selector)
	fmt.Fprintf(&b, "  template:\n    metadata:\n      labels: {app: %s}\n", w.name)
	if w.state != "" {
		fmt.Fprintf(&b, "      annotations: {%s: %s}\n", localcluster.StateAnnotation, w.state)
	}
	if w.finalizer {
		b.WriteString("      finalizers: [podsync.test/hold]\n")
	}
	fmt.Fprintf(&b, "    spec:\n%s      containers:\n      - name: app\n        image: %s\n", restart, w.image)
	if w.readiness != "" {
		fmt.Fprintf(&b, "        readinessProbe: %s\n", w.readiness)
	}
	return b.String()
}

// target is the workload as kubectl names it: deployment/web.
func (w workload) target() string { return strings.ToLower(w.kind) + "/" + w.name }

// apply creates or updates the workloads in ns.
func apply(t *testing.T, ns string, ws ...workload) {
	t.Helper()
	docs := make([]string, len(ws))
	for i, w := range ws {
		docs[i] = w.yaml()
	}
	env.Apply(t, ns, strings.Join(docs, "---\n"))
}

// rolledOut waits for `kubectl rollout status`, for a starting point.
func rolledOut(t *testing.T, ns string, w workload) {
	t.Helper()
	env.Kubectl(t, "rollout", "status", "-n", ns, w.target(), "--timeout="+settle.String())
}

// deployed applies the workload and waits until it is rolled out.
func deployed(t *testing.T, ns string, w workload) {
	t.Helper()
	apply(t, ns, w)
	rolledOut(t, ns, w)
}

// updated rolls the workload out at version 1, then sets version 2: the
// tools start on a rollout just begun.
func updated(w workload) func(*testing.T, string) {
	return func(t *testing.T, ns string) {
		deployed(t, ns, w)
		setImage(t, ns, w, 2)
	}
}

func setImage(t *testing.T, ns string, w workload, version int) {
	t.Helper()
	env.Kubectl(t, "set", "image", "-n", ns, w.target(), "app="+image(w.name, version))
}

func scale(t *testing.T, ns string, w workload, replicas int) {
	t.Helper()
	env.Kubectl(t, "scale", "-n", ns, w.target(), fmt.Sprintf("--replicas=%d", replicas))
}

// pods lists the pods of ns labelled app=NAME.
func pods(t *testing.T, ns, app string) []corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := env.Clientset(t).CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatalf("list the pods of %s in %s: %v", app, ns, err)
	}
	return list.Items
}

// waitPods waits until n pods labelled app=NAME exist, none being deleted,
// each satisfying ok.
func waitPods(t *testing.T, ns, app string, n int, what string, ok func(*corev1.Pod) bool) {
	t.Helper()
	harness.Eventually(t, settle, harness.Text(fmt.Sprintf("%d pods of %s to be %s", n, app, what)), func() bool {
		list := pods(t, ns, app)
		if len(list) != n {
			return false
		}
		for i := range list {
			if list[i].DeletionTimestamp != nil || !ok(&list[i]) {
				return false
			}
		}
		return true
	})
}

// waitImage waits until a pod labelled app=NAME runs image.
func waitImage(t *testing.T, ns, app, img string) {
	t.Helper()
	harness.Eventually(t, settle, harness.Text("a pod of "+app+" at "+img), func() bool {
		return slices.ContainsFunc(pods(t, ns, app), func(p corev1.Pod) bool { return p.Spec.Containers[0].Image == img })
	})
}

// failOn is podsync's default --fail-on, as the contract names it.
var failOn = []string{"CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull"}

// broken is true of a pod whose container has restarted or waits for a
// reason that --fail-on names by default.
func broken(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.RestartCount > 0 || cs.State.Waiting != nil && slices.Contains(failOn, cs.State.Waiting.Reason) {
			return true
		}
	}
	return false
}

// releasePods removes the finalizer of every pod labelled app=NAME.
func releasePods(t *testing.T, ns, app string) {
	t.Helper()
	for _, p := range pods(t, ns, app) {
		env.Kubectl(t, "patch", "-n", ns, "pod/"+p.Name, "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	}
}

// barePod is a pod of no workload, labelled app=APP, in state st.
func barePod(name, app, st string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  labels: {app: %s}\n  annotations: {%s: %s}\n"+
		"spec:\n  containers:\n  - name: app\n    image: registry.example/debug:1\n", name, app, localcluster.StateAnnotation, st)
}
