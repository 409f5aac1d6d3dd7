package podsync

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	appsclient "k8s.io/client-go/kubernetes/typed/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-podsync/kubectl-podsync/internal/retry"
	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// rollouts looks up, for the Deployments that hold a check back, which
// ReplicaSet is current (see check.Evaluator.ConfirmRollouts): from the
// watched Deployments and ReplicaSets (see rolloutCache) when it can, at
// once and again on each change of them; otherwise a lookup runs in its
// own goroutine and reports to the stream loop, which owns the maps.
// While a Deployment still holds the check back it is looked up again
// after a delay that grows with retry.Backoff (fast enough for a
// verdict right after a rollout, light enough for a Deployment that is
// paused); failed lookups are retried the same way, up to --max-retries,
// then its pods are judged alone.
type rollouts struct {
	apps     appsclient.AppsV1Interface
	attempts int
	warn     io.Writer
	cluster  int
	results  chan<- rolloutResult
	wg       sync.WaitGroup

	inFlight map[string]bool
	// again holds the Deployments to look up again: still held back after
	// an answer (unless once), or failed below attempts.
	again map[string]bool
	once  bool
	// delays holds the next delay of each Deployment looked up before.
	delays   map[string]wait.DelayFunc
	failures map[string]int
	// prefix names the cluster in a warning, with several ("context X: ").
	prefix string

	// cache, when ready, answers instead of lookups; stale says it changed
	// since the Deployments in again were answered, and waking that a
	// wake-up is on its way to the stream loop.
	cache         *rolloutCache
	cached, stale bool
	waking        atomic.Bool

	// warnings are held while holding (see hold).
	warnings bytes.Buffer
	holding  bool
}

// rolloutResult is one lookup's answer, for the rollouts of clusters[cluster];
// or, with wake, word that the watched Deployments or ReplicaSets changed.
type rolloutResult struct {
	cluster int
	key     string
	cur     check.CurrentRevision
	err     error
	wake    bool
}

func newRollouts(apps appsclient.AppsV1Interface, attempts int, warn io.Writer, cluster int, results chan<- rolloutResult) *rollouts {
	return &rollouts{
		apps:     apps,
		attempts: attempts,
		warn:     warn,
		cluster:  cluster,
		results:  results,
		inFlight: map[string]bool{},
		again:    map[string]bool{},
		delays:   map[string]wait.DelayFunc{},
		failures: map[string]int{},
	}
}

// ask answers or starts a lookup of each Deployment that is not being
// looked up already. Several asked about for the first time in one
// namespace are looked up together, with one list of its Deployments and
// one of its ReplicaSets: a check over thousands of Deployments is met
// when its last pod is, not thousands of requests later.
//
// The Deployments the cache can answer for are answered at once, the
// answers returned for apply.
func (r *rollouts) ask(ctx context.Context, unconfirmed []string) []rolloutResult {
	if !r.cache.ready() {
		r.lookUpAll(ctx, append(unconfirmed, r.takeAgain()...))
		return nil
	}
	keys := unconfirmed
	if !r.cached || r.stale {
		keys = append(keys, r.takeAgain()...)
		r.cached, r.stale = true, false
	}
	out := make([]rolloutResult, 0, len(keys))
	for _, k := range keys {
		if !r.inFlight[k] {
			a := r.cache.answer(k)
			out = append(out, rolloutResult{cluster: r.cluster, key: k, cur: a.cur, err: a.err})
		}
	}
	return out
}

// changed tells the stream loop that the watched objects changed, so the
// Deployments still held back are answered again; one word at a time.
func (r *rollouts) changed(ctx context.Context) {
	if r.waking.CompareAndSwap(false, true) {
		go r.send(ctx, rolloutResult{cluster: r.cluster, wake: true})
	}
}

// lookUpAll starts a lookup of each Deployment that is not being looked
// up already.
func (r *rollouts) lookUpAll(ctx context.Context, keys []string) {
	first := map[string][]string{}
	for _, k := range keys {
		if r.inFlight[k] {
			continue
		}
		r.inFlight[k] = true
		if next, ok := r.delays[k]; ok {
			delay := next()
			r.wg.Go(func() { r.lookUp(ctx, k, delay) })
			continue
		}
		r.delays[k] = retry.Backoff().DelayFunc()
		ns, _, _ := cache.SplitMetaNamespaceKey(k)
		first[ns] = append(first[ns], k)
	}
	for ns, ks := range first {
		if len(ks) == 1 {
			r.wg.Go(func() { r.lookUp(ctx, ks[0], 0) })
			continue
		}
		r.wg.Go(func() { r.lookUpNamespace(ctx, ns, ks) })
	}
}

// lookUpNamespace looks up the Deployments keys of namespace ns together,
// or one by one when the lists fail (a user who may get but not list).
func (r *rollouts) lookUpNamespace(ctx context.Context, ns string, keys []string) {
	answers, err := currentRevisions(ctx, r.apps, ns, keys)
	for _, k := range keys {
		a := answers[k]
		if err != nil {
			a.cur, a.err = currentRevision(ctx, r.apps, k)
		}
		if !r.send(ctx, rolloutResult{cluster: r.cluster, key: k, cur: a.cur, err: a.err}) {
			return
		}
	}
}

// takeAgain returns the Deployments to look up again, and forgets them.
func (r *rollouts) takeAgain() []string {
	keys := slices.Sorted(maps.Keys(r.again))
	clear(r.again)
	return keys
}

// busy reports whether a lookup is in flight or waits for its delay.
func (r *rollouts) busy() bool { return len(r.inFlight) > 0 }

// wait waits for the lookups in flight; they end with the run's context.
func (r *rollouts) wait() {
	if r != nil {
		r.wg.Wait()
	}
}

func (r *rollouts) lookUp(ctx context.Context, key string, delay time.Duration) {
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
	cur, err := currentRevision(ctx, r.apps, key)
	r.send(ctx, rolloutResult{cluster: r.cluster, key: key, cur: cur, err: err})
}

// send hands a result to the stream; false when the run has ended.
func (r *rollouts) send(ctx context.Context, res rolloutResult) bool {
	select {
	case r.results <- res:
		return true
	case <-ctx.Done():
		return false
	}
}

// apply records a lookup's result in the evaluator. A Deployment that is
// gone or may not be read cannot be confirmed; waiting would not change
// that, so its pods are judged alone, with a warning.
func (r *rollouts) apply(eval *check.Evaluator, res rolloutResult) {
	if res.wake {
		r.waking.Store(false)
		r.stale = true
		return
	}
	delete(r.inFlight, res.key)
	if res.err == nil {
		delete(r.failures, res.key)
		eval.SetCurrent(res.key, res.cur)
		switch {
		case !eval.IsUnconfirmed(res.key):
			delete(r.delays, res.key)
		case !r.once:
			r.again[res.key] = true
		}
		return
	}
	r.failures[res.key]++
	final := apierrors.IsForbidden(res.err) || apierrors.IsNotFound(res.err) || apierrors.IsUnauthorized(res.err)
	if !final && r.failures[res.key] < r.attempts {
		r.again[res.key] = true
		return
	}
	fmt.Fprintf(&r.warnings, "warning: %scannot confirm the rollout of Deployment %s, judging its pods alone: %s\n", r.prefix, res.key, text.OneLine(res.err.Error(), 0))
	eval.SetCurrent(res.key, check.CurrentRevision{Unverifiable: true})
	if !r.holding {
		r.release()
	}
}

// hold keeps the warnings of the answers applied until release, which
// writes them at once: thousands of Deployments answered together are
// one write, not thousands.
func (r *rollouts) hold() { r.holding = true }

func (r *rollouts) release() {
	r.holding = false
	if r.warnings.Len() > 0 {
		_, _ = r.warn.Write(r.warnings.Bytes())
		r.warnings.Reset()
	}
}

// currentRevision finds the ReplicaSet for the Deployment's current pod
// template the way the Deployment controller does: controlled by the
// Deployment, with the same template apart from the pod-template-hash
// label, the oldest if several. (kubectl's deployment.GetAllReplicaSets
// does the same but takes no context, so a lookup could outlive the run.)
func currentRevision(ctx context.Context, apps appsclient.AppsV1Interface, key string) (check.CurrentRevision, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return check.CurrentRevision{}, fmt.Errorf("deployment key %q: %w", key, err)
	}
	d, err := apps.Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return check.CurrentRevision{}, fmt.Errorf("get deployment %s: %w", key, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return check.CurrentRevision{}, fmt.Errorf("selector of deployment %s: %w", key, err)
	}
	list, err := apps.ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return check.CurrentRevision{}, fmt.Errorf("list replicasets of deployment %s: %w", key, err)
	}
	return currentOf(d, list.Items), nil
}

// lookedUp is what a lookup found for one Deployment.
type lookedUp struct {
	cur check.CurrentRevision
	err error
}

// currentRevisions is currentRevision for the Deployments keys of
// namespace ns, from one list of its Deployments and one of its
// ReplicaSets. A Deployment not in the list is not found, as by a get.
func currentRevisions(ctx context.Context, apps appsclient.AppsV1Interface, ns string, keys []string) (map[string]lookedUp, error) {
	deps, err := apps.Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list deployments in %s: %w", ns, err)
	}
	sets, err := apps.ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list replicasets in %s: %w", ns, err)
	}
	byName := make(map[string]*appsv1.Deployment, len(deps.Items))
	for i := range deps.Items {
		byName[deps.Items[i].Name] = &deps.Items[i]
	}
	byOwner := map[types.UID][]appsv1.ReplicaSet{}
	for i := range sets.Items {
		if ref := metav1.GetControllerOf(&sets.Items[i]); ref != nil {
			byOwner[ref.UID] = append(byOwner[ref.UID], sets.Items[i])
		}
	}
	out := make(map[string]lookedUp, len(keys))
	for _, k := range keys {
		_, name, _ := cache.SplitMetaNamespaceKey(k)
		d := byName[name]
		if d == nil {
			out[k] = lookedUp{err: fmt.Errorf("get deployment %s: %w", k, apierrors.NewNotFound(appsv1.Resource("deployments"), name))}
			continue
		}
		out[k] = lookedUp{cur: currentOf(d, byOwner[d.UID])}
	}
	return out, nil
}

// currentOf says which of sets, the ReplicaSets of Deployment d, is
// current, or why none is yet.
func currentOf(d *appsv1.Deployment, sets []appsv1.ReplicaSet) check.CurrentRevision {
	var cur check.CurrentRevision
	if rs := currentReplicaSet(d, sets); rs != nil {
		cur.ReplicaSet, cur.Hash = rs.Name, rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	}
	switch {
	case d.Status.ObservedGeneration < d.Generation:
		cur.Waiting = fmt.Sprintf("the Deployment controller has not acted on generation %d yet", d.Generation)
	case cur.Hash == "" && d.Spec.Paused:
		cur.Waiting = "no ReplicaSet has its current pod template yet: the Deployment is paused"
	case cur.Hash == "":
		cur.Waiting = "no ReplicaSet has its current pod template yet"
	}
	return cur
}

func currentReplicaSet(d *appsv1.Deployment, sets []appsv1.ReplicaSet) *appsv1.ReplicaSet {
	var best *appsv1.ReplicaSet
	for i := range sets {
		rs := &sets[i]
		if !metav1.IsControlledBy(rs, d) || !sameTemplate(&rs.Spec.Template, &d.Spec.Template) {
			continue
		}
		if best == nil || olderThan(rs, best) {
			best = rs
		}
	}
	return best
}

func olderThan(a, b *appsv1.ReplicaSet) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// sameTemplate compares pod templates without the label the controller
// adds to each ReplicaSet's copy.
func sameTemplate(a, b *corev1.PodTemplateSpec) bool {
	return equality.Semantic.DeepEqual(withoutHash(a), withoutHash(b))
}

func withoutHash(t *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	c := t.DeepCopy()
	delete(c.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	return c
}
