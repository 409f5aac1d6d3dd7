package podsync_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
)

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// widget is a custom resource of kind Widget in namespace a with a Ready
// condition of the given status.
func widget(name, ready string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"namespace": "a", "name": name, "uid": "uid-" + name, "generation": int64(1)},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Ready", "status": ready, "reason": "Test", "message": "ready is " + ready},
		}},
	}}
	return u
}

// runStatus runs a check about targets with a cluster that serves Widgets
// (with a status subresource); pods come from the sim.
func runStatus(t *testing.T, pods *sim, until string, timeout time.Duration, targets []check.Target, kube []runtime.Object, custom ...runtime.Object) (podsync.Outcome, string) {
	t.Helper()
	api := fake.NewClientset(kube...)
	api.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{
		GroupVersion: "example.com/v1",
		APIResources: []metav1.APIResource{{Name: "widgets", Kind: "Widget", Namespaced: true}, {Name: "widgets/status", Kind: "Widget"}},
	}}
	dyn := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgets: "WidgetList"}, custom...)
	w, stdout := nameWriter(t)
	stderr := &lockedBuffer{}
	cfg := podsync.Config{Output: w, Stdout: stdout, ErrOut: stderr, Check: untilSpec(t, until), Targets: targets,
		Timeout: timeout, Workers: 1, MaxRetries: 5}
	clients := &podsync.Clients{Kube: api, KubeWatch: api, Dynamic: dyn, DynamicWatch: dyn}
	out := podsync.Run(context.Background(), cfg, podsync.Cluster{Clients: clients, Source: pods.source()})
	return out, stderr.String()
}

// A custom resource is judged by its status (kstatus: a Ready condition);
// a kind the cluster does not serve is never met, and says why.
func TestCustomResourceTargets(t *testing.T) {
	ready := check.Target{APIVersion: "example.com/v1", Kind: "Widget", Namespace: "a", Name: "w"}
	out, stderr := runStatus(t, newSim(false), "ready", 10*time.Second, []check.Target{ready}, nil, widget("w", "True"))
	if out.Verdict != podsync.Met || !strings.Contains(stderr, "widget.example.com/w: Resource is Ready (kstatus)") {
		t.Errorf("verdict %v, want met with the kstatus line\n%s", out.Verdict, stderr)
	}
	out, stderr = runStatus(t, newSim(false), "ready", time.Second, []check.Target{ready}, nil, widget("w", "False"))
	if out.Verdict != podsync.NotMet || !strings.Contains(stderr, "widget.example.com/w: not met: ready is False") {
		t.Errorf("verdict %v, want not met naming the condition's message\n%s", out.Verdict, stderr)
	}
	gadget := check.Target{APIVersion: "nowhere.example.com/v1", Kind: "Gadget", Namespace: "a", Name: "g"}
	out, stderr = runStatus(t, newSim(false), "ready", time.Second, []check.Target{ready, gadget}, nil, widget("w", "True"))
	if out.Verdict != podsync.NotMet || !strings.Contains(stderr, "gadget.nowhere.example.com/g: not met: the cluster does not serve nowhere.example.com/v1") {
		t.Errorf("verdict %v, want not met naming the unserved kind\n%s", out.Verdict, stderr)
	}
}

// The pods a custom resource controls through a ReplicaSet are its own: a
// crash loop among them fails the check; a pod of a ReplicaSet a newer one
// replaces does not.
func TestCustomResourcePods(t *testing.T) {
	yes := true
	owned := func(name string, revision string, created int) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID("uid-" + name),
			Annotations:       map[string]string{"rollout.example.com/revision": revision},
			CreationTimestamp: metav1.NewTime(time.Date(2026, 12, 1, created, 0, 0, 0, time.UTC)),
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Widget", Name: "w", UID: "uid-w", Controller: &yes}}}}
	}
	podIn := func(name, set string, st podState) *corev1.Pod {
		p := newSimPod("a", name, 1, st, "")
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: set, UID: types.UID("uid-" + set), Controller: &yes}}
		return p
	}
	target := []check.Target{{APIVersion: "example.com/v1", Kind: "Widget", Namespace: "a", Name: "w"}}

	pods := newSim(false)
	pods.put(podIn("w-1-a", "w-1", crashLooping))
	out, stderr := runStatus(t, pods, "ready", 10*time.Second, target, []runtime.Object{owned("w-1", "1", 1)}, widget("w", "True"))
	if out.Verdict != podsync.Failed || !strings.Contains(stderr, "CrashLoopBackOff") {
		t.Errorf("verdict %v, want failed on the crash loop\n%s", out.Verdict, stderr)
	}

	pods = newSim(false)
	pods.put(podIn("w-1-a", "w-1", crashLooping))
	pods.put(podIn("w-2-a", "w-2", runningReady))
	out, stderr = runStatus(t, pods, "ready", 2*time.Second, target, []runtime.Object{owned("w-1", "1", 1), owned("w-2", "2", 2)}, widget("w", "True"))
	if out.Verdict != podsync.NotMet {
		t.Errorf("verdict %v, want not met: the replaced ReplicaSet's crash loop must not fail the check, and its pod is not ready\n%s", out.Verdict, stderr)
	}
}

// With --until gone, an object judged by its status must be gone itself,
// as kubectl wait --for=delete waits for it; one that is not there is.
func TestCustomResourceUntilGone(t *testing.T) {
	w := check.Target{APIVersion: "example.com/v1", Kind: "Widget", Namespace: "a", Name: "w"}
	out, stderr := runStatus(t, newSim(false), "gone", time.Second, []check.Target{w}, nil, widget("w", "True"))
	if out.Verdict != podsync.NotMet || !strings.Contains(stderr, "widget.example.com/w: not met: still exists") {
		t.Errorf("verdict %v, want not met while the Widget exists\n%s", out.Verdict, stderr)
	}
	out, stderr = runStatus(t, newSim(false), "gone", 10*time.Second, []check.Target{w}, nil)
	if out.Verdict != podsync.Met || !strings.Contains(stderr, "widget.example.com/w: is gone") {
		t.Errorf("verdict %v, want met: the Widget is not there\n%s", out.Verdict, stderr)
	}
}
