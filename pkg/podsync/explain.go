package podsync

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source"
)

// maxExplained bounds the summary of a failed check; the rest are counted.
const maxExplained = 10

// explainTime bounds the Events lookups of an explanation: the run's
// context has ended, and the explanation still gets a short while.
const explainTime = 15 * time.Second

// explainAll explains the pods of every cluster, the clusters at once, so
// that one that has gone slow or away costs the summary its own wait only;
// the pods of a cluster whose check failed come first.
func (s *stream) explainAll(ctx context.Context) ([]check.PodExplanation, int) {
	xs := make([][]check.PodExplanation, len(s.clusters))
	omitted := make([]int, len(s.clusters))
	var wg sync.WaitGroup
	for i, w := range s.clusters {
		wg.Go(func() { xs[i], omitted[i] = s.explain(ctx, w) })
	}
	wg.Wait()
	var failed, rest []check.PodExplanation
	n := 0
	for i, w := range s.clusters {
		if w.eval.Verdict().State == check.Failed {
			failed = append(failed, xs[i]...)
		} else {
			rest = append(rest, xs[i]...)
		}
		n += omitted[i]
	}
	return append(failed, rest...), n
}

// explain describes the failing pod and the pods that miss a condition,
// each with its most recent Events.
func (s *stream) explain(ctx context.Context, w *clusterRun) ([]check.PodExplanation, int) {
	v := w.eval.Verdict()
	keys := w.eval.UnsatisfiedKeys()
	if v.State == check.Failed {
		keys = append([]string{v.Failure.Key}, slices.DeleteFunc(keys, func(k string) bool { return k == v.Failure.Key })...)
	}
	omitted := 0
	if len(keys) > maxExplained {
		keys, omitted = keys[:maxExplained], len(keys)-maxExplained
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), explainTime)
	defer cancel()
	var out []check.PodExplanation
	for _, k := range keys {
		pod := w.lastPod(k)
		if pod == nil {
			continue
		}
		events, err := s.events(ctx, w, pod)
		if err != nil {
			fmt.Fprintf(s.stderr, "warning: %sevents of pod %s: %s\n", w.prefix(), k, check.OneLine(err.Error(), 0))
		}
		x := check.Explain(pod, s.cfg.Check.Conditions, events)
		x.Context = w.label
		if gap, ok := w.eval.RolloutGap(k); ok {
			x.UnmetConditions = append(x.UnmetConditions, gap)
		}
		out = append(out, x)
	}
	return out, omitted
}

// lastPod is the newest state known of the pod with key k: the informer's,
// or, when a check failed on a page of the initial list before the
// informer had the list, the page's.
func (w *clusterRun) lastPod(k string) *corev1.Pod {
	if obj, ok, err := w.ctrl.Indexer().GetByKey(k); err == nil && ok {
		return obj.(*source.PodRow).Pod
	}
	name, err := cache.ParseObjectName(k)
	if row := w.streamed[name]; err == nil && row != nil {
		return row.Pod
	}
	return nil
}

// events lists a pod's Events, retrying what may pass, up to --max-retries
// attempts.
func (s *stream) events(ctx context.Context, w *clusterRun, pod *corev1.Pod) ([]corev1.Event, error) {
	if w.clients == nil {
		return nil, nil
	}
	list, err := source.Retry(ctx, source.Backoff(), s.cfg.MaxRetries, mayPass, func() (*corev1.EventList, error) {
		return w.clients.Kube.CoreV1().Events(pod.Namespace).SearchWithContext(ctx, scheme.Scheme, pod)
	})
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return list.Items, nil
}

// mayPass reports whether a failed request may work if asked again: the
// server was unreachable or busy, rather than refusing.
func mayPass(err error) bool {
	return source.Unreachable(err) || apierrors.IsInternalError(err)
}
