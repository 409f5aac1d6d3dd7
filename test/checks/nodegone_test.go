package checks

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
)

// A DaemonSet's pod whose node is deleted while it is not ready stays
// until the pod garbage collector deletes it, about a minute later; the
// DaemonSet controller stops counting it at once, and `kubectl rollout
// status` ends once it recounts. The check does the same: it does not wait
// for that pod.
func TestDaemonSetPodOnDeletedNode(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	cs := env.Clientset(t)
	node := ownNode(t, ns)
	// On that node alone (its taint keeps every other pod off it), never
	// ready: kwok plays its kubelet.
	ds := workloadYAML("DaemonSet", "agent", "registry.example/agent:1")
	ds = strings.Replace(ds, "      labels: {app: agent}\n    spec:\n", "      labels: {app: agent}\n"+
		"      annotations: {"+localcluster.StateAnnotation+": "+localcluster.StateNeverReady+"}\n    spec:\n"+
		"      nodeSelector: {kubernetes.io/hostname: "+node+"}\n"+
		"      tolerations: [{key: podsync.test/own, operator: Exists, effect: NoSchedule}]\n", 1)
	env.Apply(t, ns, ds)
	waitPods(t, ns, "app=agent", 1, "running on "+node, func(p *corev1.Pod) bool {
		return p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning
	})
	victim := pods(t, ns, "app=agent")[0]

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cs.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete node %s: %v", node, err)
	}
	// The DaemonSet controller recounts on any change of the DaemonSet or
	// its pods; with a pod that never changes, a new annotation is one.
	env.Kubectl(t, "annotate", "-n", ns, "ds/agent", "podsync.test/touched=1")
	type kubectlResult struct {
		out  string
		err  error
		took time.Duration
	}
	rollout := make(chan kubectlResult, 1)
	go func() {
		start := time.Now()
		out, err := env.KubectlErr("rollout", "status", "-n", ns, "ds/agent", "--timeout=25s")
		rollout <- kubectlResult{out, err, time.Since(start)}
	}()
	r := check(t, "-n", ns, "ds/agent", "--until", "ready", "--timeout", "25s")
	k := <-rollout
	if k.err != nil {
		t.Errorf("kubectl rollout status: %v after %s\n%s", k.err, k.took, k.out)
	}
	wantVerdict(t, r, 0, "met")
	wantStderr(t, r, "not counting 1 pod on a deleted node")
	// The pod is still there: the check did not wait for it to go.
	if _, err := cs.CoreV1().Pods(ns).Get(ctx, victim.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("pod %s: %v; want it still there (the pod garbage collector deletes it later)", victim.Name, err)
	}
}

// ownNode registers a kwok node for this test alone, tainted so that only
// pods tolerating it go there, and deletes it at the end if it is left.
func ownNode(t *testing.T, ns string) string {
	t.Helper()
	res := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1k"), corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods: resource.MustParse("100"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        ns + "-node",
			Labels:      map[string]string{"kubernetes.io/hostname": ns + "-node", "kubernetes.io/os": "linux", "type": "kwok"},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "podsync.test/own", Value: ns, Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res},
	}
	cs := env.Clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node %s: %v", node.Name, err)
	}
	t.Cleanup(func() {
		err := cs.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete node %s: %v", node.Name, err)
		}
	})
	return node.Name
}
