package podsync

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/health"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/target"
)

// Targets of any other kind than the workloads and Pod (custom resources,
// Services, PersistentVolumeClaims, ConfigMaps, ...) are judged by their
// status (package health). Each cluster maps their kinds with its own
// discovery: a kind it does not serve leaves the target waiting, named,
// in that cluster alone. They are watched like the workloads, one
// informer per kind and namespace, through the dynamic client.
//
// Their pods are the pods whose chain of controller references leads to
// them, through the built-in kinds that make pods (a custom resource's
// ReplicaSets, an operator's StatefulSet): the namespaces of custom
// resource targets keep an index of those objects' own controllers. The
// pods of a ReplicaSet that a newer one of the same owner replaces, and all
// of them while the resource's controller has not observed its spec, are
// a revision being replaced (see olderSetsLocked, and health.NotObserved).

// maxOwnerDepth bounds the walk up a pod's controller references: a
// custom resource, its Deployment, its ReplicaSet, the pod, and room for
// one more level.
const maxOwnerDepth = 5

// statusKind is what one cluster's discovery says of a target's kind.
type statusKind struct {
	gvr       schema.GroupVersionResource
	discovery health.Discovery
	// missing says why the cluster cannot serve the target; "" when it can.
	missing string
	// namespaced: the kind's objects live in namespaces. A cluster-scoped
	// object is watched as such, whatever namespace its manifest carries
	// (kubectl apply ignores it).
	namespaced bool
}

// builtInKind says whether tg's kind is served by Kubernetes itself (in
// client-go's scheme) rather than by a CustomResourceDefinition.
func builtInKind(tg check.Target) bool {
	gv, err := schema.ParseGroupVersion(tg.APIVersion)
	return err == nil && scheme.Scheme.Recognizes(gv.WithKind(tg.Kind))
}

// discoverKind maps a target's kind with the cluster's discovery. A kind
// the cluster does not serve is not an error: the target waits, and says
// why; a discovery that fails is.
func discoverKind(ctx context.Context, c *Clients, tg check.Target) (statusKind, error) {
	gv, err := schema.ParseGroupVersion(tg.APIVersion)
	if err != nil {
		return statusKind{}, fmt.Errorf("target %s: %w", tg, err)
	}
	k := statusKind{discovery: health.Discovery{BuiltIn: builtInKind(tg)}}
	list, err := c.Kube.Discovery().ServerResourcesForGroupVersionWithContext(ctx, tg.APIVersion)
	if apierrors.IsNotFound(err) {
		k.missing = fmt.Sprintf("the cluster does not serve %s (is the CustomResourceDefinition of %s installed?)", tg.APIVersion, tg.Kind)
		return k, nil
	}
	if err != nil {
		return statusKind{}, fmt.Errorf("discover %s: %w", tg.APIVersion, err)
	}
	var resource string
	subresources := map[string]bool{}
	for _, r := range list.APIResources {
		name, sub, isSub := strings.Cut(r.Name, "/")
		switch {
		case isSub:
			subresources[name+"/"+sub] = true
		case r.Kind == tg.Kind:
			resource, k.namespaced = name, r.Namespaced
			k.discovery.Categories = r.Categories
		}
	}
	if resource == "" {
		k.missing = fmt.Sprintf("the cluster serves %s but no kind %s in it", tg.APIVersion, tg.Kind)
		return k, nil
	}
	k.gvr = gv.WithResource(resource)
	k.discovery.HasStatus = subresources[resource+"/status"]
	if !k.discovery.BuiltIn && !k.discovery.HasStatus {
		k.discovery.StatusInSchema = statusInSchema(c, gv, tg.Kind)
	}
	return k, nil
}

// statusAPI lists and watches one kind through the dynamic client.
func statusAPI(c *Clients, gvr schema.GroupVersionResource) workloadAPI {
	return workloadAPI{
		Object: &unstructured.Unstructured{},
		List: func(ctx context.Context, _ kubernetes.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
			l, err := c.Dynamic.Resource(gvr).Namespace(ns).List(ctx, o)
			if err != nil {
				return nil, err
			}
			return l, nil
		},
		Watch: func(ctx context.Context, _ kubernetes.Interface, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.DynamicWatch.Resource(gvr).Namespace(ns).Watch(ctx, o)
		},
	}
}

// judge is a target's rule over its object as it is now (nil: deleted or
// not seen yet).
func (t *targetRun) judge(tg check.Target, obj runtime.Object) check.TargetStatus {
	if note := t.absenceMeets(tg); obj == nil && note != "" && !t.gone {
		return check.TargetStatus{State: check.Met, Message: note}
	}
	if !tg.Generic() {
		return target.Judge(tg.Kind, obj)
	}
	k := t.kinds[tg]
	u, _ := obj.(*unstructured.Unstructured)
	switch {
	case t.gone:
		return goneRollout(u, k)
	case k.missing != "" && !t.once:
		return check.TargetStatus{State: check.Pending, Message: k.missing + "; podsync looks again every few seconds"}
	case k.missing != "":
		return check.TargetStatus{State: check.Pending, Message: k.missing}
	}
	return t.rules.JudgeContext(t.runCtx, u, k.discovery)
}

// absenceMeets says what the absence of a hook deleted once it succeeds
// means, and "" for any other target. A hook of a manifest without a
// namespace is keyed without one.
func (t *targetRun) absenceMeets(tg check.Target) string {
	if note, ok := t.deletedOnSuccess[tg]; ok {
		return note
	}
	tg.Namespace = ""
	return t.deletedOnSuccess[tg]
}

// goneRollout is --until gone's rule for a target judged by its status:
// met once the object is gone, as kubectl wait --for=delete waits.
func goneRollout(u *unstructured.Unstructured, k statusKind) check.TargetStatus {
	switch {
	case k.missing != "":
		return check.TargetStatus{State: check.Met, Message: "cannot exist: " + k.missing}
	case u == nil:
		return check.TargetStatus{State: check.Met, Message: "is gone"}
	case u.GetDeletionTimestamp() != nil:
		return check.TargetStatus{State: check.Pending, Message: "is being deleted"}
	}
	return check.TargetStatus{State: check.Pending, Message: "still exists"}
}

// ownsPods says whether a target's kind may have pods: a workload, a Pod,
// or a custom resource; a built-in kind judged by its status has none.
func (t *targetRun) ownsPods(tg check.Target) bool {
	// Not from t.kinds: the pod controller's workers call it while the
	// stream learns kinds served late.
	return !tg.Generic() || !builtInKind(tg)
}

// link is what the owner index keeps of an object that makes pods.
type link struct {
	kind, namespace, name string
	uid                   string
	controller            *metav1.OwnerReference
	// revision orders the ReplicaSets of one owner: its revision
	// annotation (controllers raise it on a rollback too), then its
	// creation time.
	revision int64
	created  time.Time
}

// newer says whether l is a later revision than o.
func (l link) newer(o link) bool {
	if l.revision != o.revision {
		return l.revision > o.revision
	}
	return l.created.After(o.created)
}

// revisionOf reads the revision annotation that controllers of
// ReplicaSets write (deployment.kubernetes.io/revision, and the same
// under their own prefix); 0 without one.
func revisionOf(m metav1.Object) int64 {
	for k, v := range m.GetAnnotations() {
		if strings.HasSuffix(k, "/revision") {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return n
			}
		}
	}
	return 0
}

func linkKey(group, kind, ns, name string) string {
	return group + "/" + kind + "/" + ns + "/" + name
}

// ownsThroughChainLocked reports whether the chain of controller references from
// pod leads to tg, a custom resource. t.mu is held for reading.
func (t *targetRun) ownsThroughChainLocked(tg check.Target, pod *metav1.ObjectMeta) bool {
	ref := metav1.GetControllerOfNoCopy(pod)
	for depth := 0; ref != nil && depth < maxOwnerDepth; depth++ {
		if refersTo(ref, tg, t.uids[tg]) {
			return true
		}
		l, ok := t.links[linkKey(groupOf(ref.APIVersion), ref.Kind, pod.Namespace, ref.Name)]
		if !ok || l.uid != string(ref.UID) {
			return false
		}
		ref = l.controller
	}
	return false
}

// customNamespaces are the namespaces of the custom resource targets that
// the cluster serves: their pods are found through the owner index.
func (t *targetRun) customNamespaces() []string {
	var out []string
	for _, ts := range t.list {
		tg := ts.target
		if k, ok := t.kinds[tg]; ok && k.missing == "" && !k.discovery.BuiltIn && tg.Namespace != "" && !slices.Contains(out, tg.Namespace) {
			out = append(out, tg.Namespace)
		}
	}
	return out
}

// linkHandler keeps the owner index of one kind. An object new to the
// index has the pod controller look again at its namespace's pods: a pod
// seen before the objects above it was not known to be a target's.
func (t *targetRun) linkHandler(k target.Kind) cache.ResourceEventHandler {
	group, kind := k.Group, k.Kind
	return objectHandler(func(m metav1.Object) {
		key := linkKey(group, kind, m.GetNamespace(), m.GetName())
		l := link{kind: kind, namespace: m.GetNamespace(), name: m.GetName(), uid: string(m.GetUID()),
			controller: metav1.GetControllerOfNoCopy(m), revision: revisionOf(m), created: m.GetCreationTimestamp().Time}
		t.mu.Lock()
		old, known := t.links[key]
		t.links[key] = l
		t.mu.Unlock()
		if !known && t.ctrl != nil {
			select {
			case <-t.ctrl.Recheck(m.GetNamespace()):
			case <-t.ctx.Done():
			}
		}
		if !known || old.revision != l.revision {
			t.resendRoots(l)
		}
	}, func(m metav1.Object) {
		key := linkKey(group, kind, m.GetNamespace(), m.GetName())
		t.mu.Lock()
		l, known := t.links[key]
		delete(t.links, key)
		t.mu.Unlock()
		if known {
			t.resendRoots(l)
		}
	})
}

// leadsToLocked reports whether the chain of controllers above l leads to
// tg. t.mu is held for reading.
func (t *targetRun) leadsToLocked(l link, tg check.Target) bool {
	ref := l.controller
	for depth := 0; ref != nil && depth < maxOwnerDepth; depth++ {
		if refersTo(ref, tg, t.uids[tg]) {
			return true
		}
		up, ok := t.links[linkKey(groupOf(ref.APIVersion), ref.Kind, l.namespace, ref.Name)]
		if !ok || up.uid != string(ref.UID) {
			return false
		}
		ref = up.controller
	}
	return false
}

// olderSetsLocked names the ReplicaSets under a custom resource target
// that a newer ReplicaSet of the same owner replaces: their pods are a
// revision being replaced, as a Deployment's older ReplicaSets' are. t.mu
// is held for reading.
func (t *targetRun) olderSetsLocked(tg check.Target) map[string]bool {
	newest := map[string]link{} // owner UID -> its newest ReplicaSet
	var sets []link
	for _, l := range t.links {
		if l.kind != check.TargetReplicaSet || l.namespace != tg.Namespace || l.controller == nil || !t.leadsToLocked(l, tg) {
			continue
		}
		sets = append(sets, l)
		owner := string(l.controller.UID)
		if n, ok := newest[owner]; !ok || l.newer(n) {
			newest[owner] = l
		}
	}
	old := map[string]bool{}
	for _, l := range sets {
		if newest[string(l.controller.UID)].name != l.name {
			old[l.name] = true
		}
	}
	return old
}

// resendRoots hands the stream again the custom resource targets above l,
// so that their revisions are worked out anew.
func (t *targetRun) resendRoots(l link) {
	if l.kind != check.TargetReplicaSet {
		return
	}
	for _, ts := range t.list {
		tg := ts.target
		if !tg.Generic() || tg.Namespace != l.namespace {
			continue
		}
		t.mu.RLock()
		obj, above := t.objects[tg], t.leadsToLocked(l, tg)
		t.mu.RUnlock()
		if above && obj != nil {
			t.send(workloadEvent{cluster: t.cluster, target: tg, obj: obj})
		}
	}
}

// statusInSchema says whether the published schema (OpenAPI v3) of a
// kind declares a status field: a controller that writes status through
// the main resource (a CustomResourceDefinition without the status
// subresource, as Argo CD's Application) has one to wait for. Any
// failure to read the schema says no, as before the question was asked.
func statusInSchema(c *Clients, gv schema.GroupVersion, kind string) bool {
	paths, err := c.Kube.Discovery().OpenAPIV3().Paths()
	if err != nil {
		klog.V(2).Infof("podsync: the OpenAPI schema of %s cannot be read: %v", gv, err)
		return false
	}
	doc, ok := paths["apis/"+gv.Group+"/"+gv.Version]
	if !ok {
		return false
	}
	data, err := doc.Schema("application/json")
	if err != nil {
		klog.V(2).Infof("podsync: the OpenAPI schema of %s cannot be read: %v", gv, err)
		return false
	}
	var spec struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
				GVK        []struct {
					Group, Version, Kind string
				} `json:"x-kubernetes-group-version-kind"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(data, &spec); err != nil {
		return false
	}
	for _, s := range spec.Components.Schemas {
		for _, g := range s.GVK {
			if g.Group == gv.Group && g.Version == gv.Version && g.Kind == kind {
				_, has := s.Properties["status"]
				return has
			}
		}
	}
	return false
}
