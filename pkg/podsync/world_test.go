package podsync_test

import (
	"context"
	"fmt"
	"strings"
	"testing/synctest"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// The model's workloads: histories about targets watch Deployment web
// (revision N is ReplicaSet web-rN, whose pods run image vN) and
// StatefulSet db (revision N is db-rN) and DaemonSet ds (revision N is
// the ControllerRevision ds-rN; the newest is rolled out), which roll out
// and back between revisions 1 and 2, and StatefulSet zz, which controls
// the sentinel.
// Each pod name belongs to one owner: web or db (the pods they control,
// each incarnation at one revision), or foreign-web and foreign-db: pods
// that carry the workload's labels but that no controller owns (a debug
// pod), never shown nor judged. The workloads' status says "not rolled
// out" while the history plays; when it ends, the model writes the status
// their controllers would write for the pods that are left.

// workloads are the targets that roll out; owners what a pod name can
// belong to.
var (
	workloads = []string{"web", "db", "ds"}
	owners    = []string{"web", "web", "db", "db", "ds", "foreign-web", "foreign-db", "foreign-ds"}
)

// desired is the replicas each workload's spec asks for (ds: the nodes
// it should run on).
var desired = map[string]int32{"web": 1, "db": 2, "ds": 1}

var modelTargets = []check.Target{
	{Kind: check.TargetDeployment, Namespace: "a", Name: "web"},
	{Kind: check.TargetStatefulSet, Namespace: "a", Name: "db"},
	{Kind: check.TargetDaemonSet, Namespace: "a", Name: "ds"},
	{Kind: check.TargetStatefulSet, Namespace: "a", Name: "zz"},
}

func (h *history) ownerText(k, rev int) string {
	if !h.targets {
		if c := h.controllers[k]; c != "" {
			return " (of a " + c + ")"
		}
		return ""
	}
	o := h.owners[k]
	if strings.HasPrefix(o, "foreign") {
		return " (" + o + ")"
	}
	return fmt.Sprintf(" (%s revision %d)", o, rev)
}

// owned: the pods of key belong to a target.
func owned(owner string) bool { return owner != "" && !strings.HasPrefix(owner, "foreign") }

// controlledBy makes p a pod of a ReplicaSet or a Job (controllers,
// without targets), without labels that would make it any workload's.
func controlledBy(p *corev1.Pod, controller string) {
	yes := true
	ref := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "sim-rs", UID: "uid-sim-rs", Controller: &yes}
	if controller == "job" {
		ref = metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "sim-job", UID: "uid-sim-job", Controller: &yes}
	}
	p.OwnerReferences = []metav1.OwnerReference{ref}
}

// decorate makes p a pod of owner at revision rev.
func decorate(p *corev1.Pod, owner string, rev int) {
	yes := true
	app, _ := strings.CutPrefix(owner, "foreign-")
	p.Labels["app"] = app
	switch owner {
	case "web":
		hash := fmt.Sprintf("r%d", rev)
		p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-" + hash,
			UID: types.UID("uid-web-" + hash), Controller: &yes}}
	case "db", "zz", "ds":
		kind := "StatefulSet"
		if owner == "ds" {
			kind = "DaemonSet"
		}
		p.Labels[appsv1.ControllerRevisionHashLabelKey] = fmt.Sprintf("%s-r%d", owner, rev)
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: owner,
			UID: types.UID("uid-" + owner), Controller: &yes}}
	}
}

func webTemplate(rev int) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: fmt.Sprintf("sim:v%d", rev)}}},
	}
}

// rolloutStatus is what a workload's controller reports of its pods.
type rolloutStatus struct {
	replicas, updated, ready int32
}

// webDeployment is Deployment web rolling out revision rev, its
// controller having observed it.
func webDeployment(rev int, st rolloutStatus) *appsv1.Deployment {
	n := desired["web"]
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web", UID: "uid-web", Generation: int64(rev)},
		Spec: appsv1.DeploymentSpec{Replicas: &n, Template: webTemplate(rev),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: int64(rev), Replicas: st.replicas, UpdatedReplicas: st.updated,
			ReadyReplicas: st.ready, AvailableReplicas: st.ready},
	}
}

func webReplicaSet(rev int) *appsv1.ReplicaSet {
	yes := true
	hash := fmt.Sprintf("r%d", rev)
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web-" + hash, UID: types.UID("uid-web-" + hash),
			Labels:          map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-web", Controller: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Template: webTemplate(rev),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash}}},
	}
}

// statefulSet is StatefulSet name rolling out revision rev, observed.
func modelStatefulSet(name string, rev int, st rolloutStatus) *appsv1.StatefulSet {
	n := desired[name]
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec: appsv1.StatefulSetSpec{Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: st.replicas, ReadyReplicas: st.ready,
			UpdatedReplicas: st.updated, UpdateRevision: fmt.Sprintf("%s-r%d", name, rev), CurrentRevision: name + "-r1"},
	}
}

// daemonSet is DaemonSet ds, observed.
func daemonSet(st rolloutStatus) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "ds", UID: "uid-ds", Generation: 1},
		Spec:       appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ds"}}},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: desired["ds"],
			CurrentNumberScheduled: st.replicas, UpdatedNumberScheduled: st.updated, NumberReady: st.ready, NumberAvailable: st.ready},
	}
}

// dsRevision is ControllerRevision ds-rN of DaemonSet ds, numbered n: the
// DaemonSet rolls out its highest-numbered revision, and a rollback
// numbers an old one anew.
func dsRevision(rev int, n int64) *appsv1.ControllerRevision {
	yes := true
	name := fmt.Sprintf("ds-r%d", rev)
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID("uid-" + name),
			Labels:          map[string]string{"app": "ds", appsv1.ControllerRevisionHashLabelKey: name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "uid-ds", Controller: &yes}}},
		Revision: n,
	}
}

// world is the workloads of a history about targets, in a fake API.
type world struct {
	api *fake.Clientset
	// numbered is the highest revision number of ds's revisions.
	numbered int64
}

// newWorld holds the workloads as they are before the run: when final,
// their status is the one their pods give (--once judges it at once).
func newWorld(tr *truth, final bool) *world {
	st := map[string]rolloutStatus{}
	if final {
		st = tr.rolloutStatus()
	}
	cur := tr.current["ds"]
	objs := []runtime.Object{
		webDeployment(tr.current["web"], st["web"]), webReplicaSet(1), webReplicaSet(2),
		modelStatefulSet("db", tr.current["db"], st["db"]), modelStatefulSet("zz", 1, rolloutStatus{}),
		daemonSet(st["ds"]), dsRevision(3-cur, 1), dsRevision(cur, 2),
		// The node the pods are bound to (newSimPod): a DaemonSet's pod on
		// a node that is gone is not judged.
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}},
	}
	return &world{api: fake.NewClientset(objs...), numbered: 2}
}

// rollOut has workload rolling out revision rev, its status "not rolled
// out" until finish writes the final one.
func (w *world) rollOut(workload string, rev int) error {
	ctx := context.Background()
	var err error
	switch workload {
	case "web":
		_, err = w.api.AppsV1().Deployments("a").Update(ctx, webDeployment(rev, rolloutStatus{}), metav1.UpdateOptions{})
	case "db":
		_, err = w.api.AppsV1().StatefulSets("a").Update(ctx, modelStatefulSet("db", rev, rolloutStatus{}), metav1.UpdateOptions{})
	case "ds":
		w.numbered++
		_, err = w.api.AppsV1().ControllerRevisions("a").Update(ctx, dsRevision(rev, w.numbered), metav1.UpdateOptions{})
	}
	// The run hears of it by a watch of its own, beside the pods': the
	// model's failures are judged against the revision it rolls out from
	// now on, so the run must have heard of it first, which it has once
	// every goroutine of the bubble waits.
	synctest.Wait()
	return err
}

// finish writes the status the controllers would write for the pods left.
func (w *world) finish(tr *truth) error {
	ctx := context.Background()
	st := tr.rolloutStatus()
	if _, err := w.api.AppsV1().Deployments("a").Update(ctx, webDeployment(tr.current["web"], st["web"]), metav1.UpdateOptions{}); err != nil {
		return err
	}
	if _, err := w.api.AppsV1().StatefulSets("a").Update(ctx, modelStatefulSet("db", tr.current["db"], st["db"]), metav1.UpdateOptions{}); err != nil {
		return err
	}
	_, err := w.api.AppsV1().DaemonSets("a").Update(ctx, daemonSet(st["ds"]), metav1.UpdateOptions{})
	return err
}
