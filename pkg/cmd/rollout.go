package cmd

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsclient "k8s.io/client-go/kubernetes/typed/apps/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// rollouts looks up, for the Deployments that hold a check back, which
// ReplicaSet is current (see check.Evaluator.ConfirmRollouts). A lookup
// runs in its own goroutine and reports to the stream loop, which owns the
// maps. While a Deployment still holds the check back it is looked up
// again after a rate-limited delay; failed lookups are retried the same
// way, up to --max-retries, then its pods are judged alone.
type rollouts struct {
	apps     appsclient.AppsV1Interface
	limiter  workqueue.TypedRateLimiter[string]
	attempts int
	warn     io.Writer
	results  chan rolloutResult
	wg       sync.WaitGroup

	inFlight map[string]bool
	looked   map[string]bool // looked up before: the next lookup waits
	failures map[string]int
}

type rolloutResult struct {
	key string
	cur check.CurrentRevision
	err error
}

// The delay between two lookups of one Deployment grows from a quarter
// second to five seconds: fast enough for a verdict right after a
// rollout, light enough for a Deployment that is paused.
const (
	rolloutRetryBase = 250 * time.Millisecond
	rolloutRetryMax  = 5 * time.Second
)

func newRollouts(apps appsclient.AppsV1Interface, attempts int, warn io.Writer) *rollouts {
	return &rollouts{
		apps:     apps,
		limiter:  workqueue.NewTypedItemExponentialFailureRateLimiter[string](rolloutRetryBase, rolloutRetryMax),
		attempts: attempts,
		warn:     warn,
		results:  make(chan rolloutResult),
		inFlight: map[string]bool{},
		looked:   map[string]bool{},
		failures: map[string]int{},
	}
}

// ask starts a lookup of each Deployment that is not being looked up
// already.
func (r *rollouts) ask(ctx context.Context, keys []string) {
	for _, k := range keys {
		if r.inFlight[k] {
			continue
		}
		r.inFlight[k] = true
		var delay time.Duration
		if r.looked[k] {
			delay = r.limiter.When(k)
		}
		r.looked[k] = true
		r.wg.Go(func() { r.lookUp(ctx, k, delay) })
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
	select {
	case r.results <- rolloutResult{key: key, cur: cur, err: err}:
	case <-ctx.Done():
	}
}

// apply records a lookup's result in the evaluator. A Deployment that is
// gone or may not be read cannot be confirmed; waiting would not change
// that, so its pods are judged alone, with a warning.
func (r *rollouts) apply(eval *check.Evaluator, res rolloutResult) {
	delete(r.inFlight, res.key)
	if res.err == nil {
		delete(r.failures, res.key)
		eval.SetCurrent(res.key, res.cur)
		if !slices.Contains(eval.Unconfirmed(), res.key) {
			r.limiter.Forget(res.key)
			delete(r.looked, res.key)
		}
		return
	}
	r.failures[res.key]++
	final := apierrors.IsForbidden(res.err) || apierrors.IsNotFound(res.err) || apierrors.IsUnauthorized(res.err)
	if !final && r.failures[res.key] < r.attempts {
		return
	}
	fmt.Fprintf(r.warn, "warning: cannot confirm the rollout of Deployment %s, judging its pods alone: %s\n", res.key, oneLine(res.err))
	eval.SetCurrent(res.key, check.CurrentRevision{Unverifiable: true})
}

// currentRevision finds the ReplicaSet for the Deployment's current pod
// template the way the Deployment controller does: controlled by the
// Deployment, with the same template apart from the pod-template-hash
// label, the oldest if several.
func currentRevision(ctx context.Context, apps appsclient.AppsV1Interface, key string) (check.CurrentRevision, error) {
	ns, name, _ := strings.Cut(key, "/")
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
	var cur check.CurrentRevision
	if rs := currentReplicaSet(d, list.Items); rs != nil {
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
	return cur, nil
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
