package check

import (
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
)

// A Deployment rolls out by running pods of two ReplicaSets side by side:
// for a while every matching pod can be ready although the new version is
// not fully there (new pod 1 is ready, old pods 2 and 3 still run). Pods
// alone show this: a Deployment's ReplicaSet is named DEPLOYMENT-HASH and
// its pods carry the label pod-template-hash=HASH. While pods of more than
// one ReplicaSet of one Deployment match (pods being deleted aside), the
// rollout is not over and --until is not met, whatever the conditions say.

// workload is one Deployment, as seen through the pods that match.
type workload struct {
	key  string // namespace/name of the Deployment
	revs map[string]*revision
	// unconfirmed: the workload holds the check back (see ConfirmRollouts).
	unconfirmed bool
}

// revision is one ReplicaSet of a workload and the counted pods it has.
type revision struct {
	w    *workload
	hash string
	rs   string // the ReplicaSet's name
	pods int
	// newest is the latest creation time of a pod of this ReplicaSet seen
	// while the check ran: the ReplicaSet that created a pod last is the
	// one the Deployment is rolling out (or back) to.
	newest time.Time
}

// deploymentOf returns the namespace/name of the Deployment whose
// ReplicaSet controls pod, that ReplicaSet's name and the pod's template
// hash; ok is false for a pod that no Deployment manages.
func deploymentOf(pod *corev1.Pod) (deployment, rs, hash string, ok bool) {
	hash = pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	if hash == "" {
		return "", "", "", false
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != "ReplicaSet" || !strings.HasPrefix(ref.APIVersion, "apps/") {
		return "", "", "", false
	}
	name, found := strings.CutSuffix(ref.Name, "-"+hash)
	if !found || name == "" {
		return "", "", "", false
	}
	return pod.Namespace + "/" + name, ref.Name, hash, true
}

// addRevision counts pod under its ReplicaSet and returns the revision, or
// nil for a pod no Deployment manages.
func (e *Evaluator) addRevision(pod *corev1.Pod) *revision {
	dep, rs, hash, ok := deploymentOf(pod)
	if !ok {
		return nil
	}
	w := e.workloads[dep]
	if w == nil {
		w = &workload{key: dep, revs: map[string]*revision{}}
		e.workloads[dep] = w
	}
	r := w.revs[hash]
	if r == nil {
		r = &revision{w: w, hash: hash, rs: rs}
		w.revs[hash] = r
		if len(w.revs) == 2 {
			e.rollouts++
		}
	}
	r.pods++
	if t := pod.CreationTimestamp.Time; t.After(r.newest) {
		r.newest = t
	}
	e.reconfirm(w)
	return r
}

// removeRevision takes one pod off its ReplicaSet's count; a ReplicaSet
// without pods and a Deployment without ReplicaSets are forgotten.
func (e *Evaluator) removeRevision(r *revision) {
	if r == nil {
		return
	}
	r.pods--
	if r.pods > 0 {
		return
	}
	w := r.w
	delete(w.revs, r.hash)
	if len(w.revs) == 1 {
		e.rollouts--
	}
	e.reconfirm(w)
	if len(w.revs) == 0 {
		delete(e.workloads, w.key)
	}
}

// latest is the revision the workload is moving to: the current one when
// the API said which, else the one that created a pod last.
func (e *Evaluator) latest(w *workload) *revision {
	if c, ok := e.current[w.key]; ok && w.revs[c.Hash] != nil {
		return w.revs[c.Hash]
	}
	var best *revision
	for _, r := range w.revs {
		if best == nil || r.newest.After(best.newest) ||
			r.newest.Equal(best.newest) && r.rs > best.rs {
			best = r
		}
	}
	return best
}

// RolloutGap says why a pod of a Deployment that is still rolling out
// holds the check back: it belongs to a ReplicaSet being replaced, or to
// one the API did not confirm as current. ok is false for any other pod.
func (e *Evaluator) RolloutGap(key string) (UnmetCondition, bool) {
	st := e.pods[key]
	if st == nil || st.rev == nil {
		return UnmetCondition{}, false
	}
	if st.rev.w.unconfirmed {
		return e.unconfirmedGap(st.rev.w, st.rev)
	}
	if len(st.rev.w.revs) < 2 {
		return UnmetCondition{}, false
	}
	latest := e.latest(st.rev.w)
	if latest == st.rev {
		return UnmetCondition{}, false
	}
	deployment := nameOf(st.rev.w.key)
	return UnmetCondition{
		Condition: "rollout",
		Want:      fmt.Sprintf("only pods of ReplicaSet %s, the newest of Deployment %s", latest.rs, deployment),
		Got:       fmt.Sprintf("pod of ReplicaSet %s, which is being replaced", st.rev.rs),
	}, true
}

// Rollouts describes each Deployment still rolling out, sorted, as
// "ns/web (ReplicaSets web-5d8f 2 pods, web-7c9b 1 pod)". It costs
// O(workloads), so call it once, for the summary.
func (e *Evaluator) Rollouts() []string {
	var out []string
	for _, w := range e.workloads {
		if len(w.revs) < 2 {
			continue
		}
		parts := make([]string, 0, len(w.revs))
		for _, r := range w.revs {
			parts = append(parts, fmt.Sprintf("%s %d %s", r.rs, r.pods, text.Plural(r.pods, "pod", "pods")))
		}
		sort.Strings(parts)
		out = append(out, fmt.Sprintf("%s (ReplicaSets %s)", w.key, strings.Join(parts, ", ")))
	}
	sort.Strings(out)
	return out
}

// nameOf is the name part of a namespace/name key.
func nameOf(key string) string {
	_, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return key
	}
	return name
}
