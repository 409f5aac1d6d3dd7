package podsync

import (
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/health"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/target"
)

// A target's pods are the pods it controls, as its controller counts them:
// those whose controller reference leads to it, directly (StatefulSet,
// DaemonSet, Job, ReplicaSet) or through one of its ReplicaSets
// (Deployment). Labels alone never make a pod a target's: a debug pod, a
// Job's pod or a test hook that happens to match a workload's selector is
// named once on stderr and not judged. References are matched by kind and
// name, and also by UID once the target's object has been seen: the pods
// of a target deleted before the run are still found (--until gone waits
// for them), while those of an older object of the same name are not
// taken for the new one's.
//
// Within a target, the pods of a revision being replaced (a Deployment's
// older ReplicaSets, StatefulSet and DaemonSet pods not at the revision
// being rolled out) never fail the check: see check.Evaluator.SetReplaced.

// revisionLabel is the label the StatefulSet and DaemonSet controllers put
// on each pod: the hash of the revision it runs.
const revisionLabel = appsv1.ControllerRevisionHashLabelKey

// revisions says which of a workload's pods are being replaced.
type revisions struct {
	// settling: the controller has not acted on the newest spec yet, so
	// every pod may be on its way out.
	settling bool
	// current is the revision hash the pods are moving to; a pod with
	// another is replaced.
	current string
	// oldSets names a Deployment's ReplicaSets whose pod template is not
	// the Deployment's: their pods are replaced.
	oldSets map[string]bool
}

func (r revisions) equal(o revisions) bool {
	return r.settling == o.settling && r.current == o.current && maps.Equal(r.oldSets, o.oldSets)
}

// replaces reports whether the pod belongs to a revision being replaced.
func (r revisions) replaces(pod *metav1.ObjectMeta) bool {
	switch {
	case r.settling:
		return true
	case r.current != "":
		return pod.Labels[revisionLabel] != r.current
	case len(r.oldSets) > 0:
		ref := metav1.GetControllerOfNoCopy(pod)
		return ref != nil && r.oldSets[ref.Name]
	}
	return false
}

// owns reports whether pod is one of tg's pods. It is called from the pod
// controller's workers and from the stream.
func (t *targetRun) owns(tg check.Target, pod *metav1.ObjectMeta) bool {
	if pod.Namespace != tg.Namespace {
		return false
	}
	k, builtIn := target.Lookup(tg.Kind)
	if builtIn && k.Client.Object == nil {
		// A Pod target: its pod is itself.
		return pod.Name == tg.Name
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return false
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	switch {
	case tg.Generic():
		return t.ownsPods(tg) && t.ownsThroughChainLocked(tg, pod)
	case k.Via == "":
		return refersTo(ref, tg, t.uids[tg])
	}
	return t.ownsViaLocked(tg, k.Via, ref, pod)
}

// ownsViaLocked reports whether pod, whose controller is ref, is one of
// tg's through an object of kind via (a Deployment's ReplicaSet). t.mu is
// held for reading.
func (t *targetRun) ownsViaLocked(tg check.Target, via string, ref *metav1.OwnerReference, pod *metav1.ObjectMeta) bool {
	row, _ := target.Lookup(via)
	if ref.Kind != via || groupOf(ref.APIVersion) != row.Group {
		return false
	}
	if o := t.vias[via+"/"+pod.Namespace+"/"+ref.Name]; o != nil && o.GetUID() == ref.UID {
		owner := metav1.GetControllerOfNoCopy(o)
		return owner != nil && refersTo(owner, tg, t.uids[tg])
	}
	// A ReplicaSet not seen (deleted already, or not yet known) is the
	// Deployment's by the name its controller gives it: DEPLOYMENT-HASH,
	// HASH being the pod's pod-template-hash, a label only the pods of
	// ReplicaSets carry.
	hash := pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	return hash != "" && ref.Name == tg.Name+"-"+hash
}

// refersTo reports whether an owner reference names tg; uid is tg's once
// its object has been seen, "" before.
func refersTo(ref *metav1.OwnerReference, tg check.Target, uid types.UID) bool {
	group := groupOf(tg.APIVersion)
	if k, ok := target.Lookup(tg.Kind); ok && !tg.Generic() {
		group = k.Group
	}
	return ref.Kind == tg.Kind && ref.Name == tg.Name && groupOf(ref.APIVersion) == group &&
		(uid == "" || ref.UID == uid)
}

func groupOf(apiVersion string) string {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return ""
	}
	return gv.Group
}

// nameForeign says once, for a pod that no target owns, that it matches a
// target's selector all the same and is not judged.
func (t *targetRun) nameForeign(pod *metav1.ObjectMeta) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := pod.Namespace + "/" + pod.Name + "/" + string(pod.UID)
	if t.foreign[key] {
		return
	}
	for _, ts := range t.list {
		sel := t.selectors[ts.target]
		if ts.target.Namespace != pod.Namespace || sel == nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		t.foreign[key] = true
		fmt.Fprintf(t.stderr, "podsync: %spod %s matches the selector of %s but is not controlled by it: not judged\n",
			t.prefix, pod.Name, ts.target)
		return
	}
}

// revisionsOf works out which pods of tg its object obj is replacing.
func (t *targetRun) revisionsOf(tg check.Target, obj runtime.Object) revisions {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if tg.Generic() {
		// Until its controller has acted on the newest spec, every
		// pod under it may be on its way out.
		if u, ok := obj.(*unstructured.Unstructured); ok {
			if _, stale := health.NotObserved(u); stale {
				return revisions{settling: true}
			}
		}
		return revisions{oldSets: t.olderSetsLocked(tg)}
	}
	if obj == nil {
		return revisions{}
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return revisions{}
	}
	k, _ := target.Lookup(tg.Kind)
	rule := k.Revisions
	if rule.Template != nil {
		return revisions{oldSets: t.otherTemplatesLocked(m, rule.Template(obj))}
	}
	if rule.Of == nil {
		return revisions{}
	}
	switch r := rule.Of(obj); {
	case r.OnDelete:
		return revisions{}
	case r.Settling:
		return revisions{settling: true}
	case rule.History:
		return revisions{current: t.newestHistoryLocked(m)}
	default:
		return revisions{current: r.Current}
	}
}

// otherTemplatesLocked names the ReplicaSets that owner controls whose
// pod template is not tmpl: their pods are being replaced.
func (t *targetRun) otherTemplatesLocked(owner metav1.Object, tmpl *corev1.PodTemplateSpec) map[string]bool {
	old := map[string]bool{}
	for _, o := range t.vias {
		rs, ok := o.(*appsv1.ReplicaSet)
		if ok && tmpl != nil && rs.Namespace == owner.GetNamespace() && metav1.IsControlledBy(rs, owner) && !sameTemplate(&rs.Spec.Template, tmpl) {
			old[rs.Name] = true
		}
	}
	return old
}

// newestHistoryLocked is the revision hash of the DaemonSet's newest
// ControllerRevision: once the controller has observed the spec, the one
// of its pod template.
func (t *targetRun) newestHistoryLocked(ds metav1.Object) string {
	var newest *appsv1.ControllerRevision
	for _, h := range t.histories {
		if h.Namespace == ds.GetNamespace() && metav1.IsControlledBy(h, ds) && (newest == nil || h.Revision > newest.Revision) {
			newest = h
		}
	}
	if newest == nil {
		return ""
	}
	return newest.Labels[revisionLabel]
}

// replaced is the Evaluator's SetReplaced: pod is replaced by one of the
// targets that own it.
func (t *targetRun) replaced(key string, pod *corev1.Pod) bool {
	for _, ts := range t.owners[key] {
		if ts.revs.replaces(&pod.ObjectMeta) {
			return true
		}
	}
	return false
}

// rejudge judges the shown pods of ts again, as the informer holds them,
// once its revisions changed: a pod spared as replaced may now belong to
// the revision rolled out (a rollback to it), and a failure it shows must
// not wait for its next change.
func (t *targetRun) rejudge(ts *targetState, eval *check.Evaluator) {
	if t.ctrl == nil {
		return
	}
	for key, owners := range t.owners {
		if !slices.Contains(owners, ts) {
			continue
		}
		obj, ok, err := t.ctrl.Indexer().GetByKey(key)
		row, isRow := obj.(*wire.PodRow)
		if err != nil || !ok || !isRow {
			continue
		}
		eval.ObserveStatus(key, row.Pod(), wire.Cell(row, "Status"), false)
	}
}

// revisionHandler keeps the ReplicaSets or ControllerRevisions of the
// targets' namespaces, and has the target that controls one judged again.
func (t *targetRun) revisionHandler(kind, owner string) cache.ResourceEventHandler {
	return objectHandler(func(m metav1.Object) {
		t.learnRevision(kind, m.GetNamespace()+"/"+m.GetName(), m)
		t.resend(owner, m)
	}, func(m metav1.Object) {
		t.learnRevision(kind, m.GetNamespace()+"/"+m.GetName(), nil)
		t.resend(owner, m)
	})
}

// objectHandler calls put with each object added or updated, and gone
// with each deleted, a tombstone's last state included.
func objectHandler(put, gone func(metav1.Object)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if m, ok := obj.(metav1.Object); ok {
				put(m)
			}
		},
		UpdateFunc: func(_, obj interface{}) {
			if m, ok := obj.(metav1.Object); ok {
				put(m)
			}
		},
		DeleteFunc: func(obj interface{}) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if m, ok := obj.(metav1.Object); ok {
				gone(m)
			}
		},
	}
}

// learnRevision records (or, with obj nil, forgets) an object of kind: one
// a target makes its pods through (its row's Via: a Deployment's
// ReplicaSet, a CronJob's Job) or a ControllerRevision. The objects are
// the informer's: only read.
func (t *targetRun) learnRevision(kind, key string, obj metav1.Object) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key = kind + "/" + key
	switch o := obj.(type) {
	case nil:
		delete(t.vias, key)
		delete(t.histories, key)
	case *appsv1.ControllerRevision:
		t.histories[key] = o
	default:
		t.vias[key] = o
	}
}

// resend hands the stream, again, the object of the target of kind owner
// that controls m, so that its revisions are worked out anew.
func (t *targetRun) resend(owner string, m metav1.Object) {
	ref := metav1.GetControllerOfNoCopy(m)
	if ref == nil {
		return
	}
	tg := check.Target{Kind: owner, Namespace: m.GetNamespace(), Name: ref.Name}
	t.mu.RLock()
	obj := t.objects[tg]
	t.mu.RUnlock()
	if ref.Kind != owner || obj == nil {
		return
	}
	t.send(workloadEvent{cluster: t.cluster, target: tg, obj: obj})
}
