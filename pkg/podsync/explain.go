package podsync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubectl-podsync/kubectl-podsync/internal/retry"
	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/diagnose"
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
// each with its most recent Events and its diagnosis.
func (s *stream) explain(ctx context.Context, w *clusterRun) ([]check.PodExplanation, int) {
	keys, omitted := explainedKeys(w)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), explainTime)
	defer cancel()
	var out []check.PodExplanation
	for _, k := range keys {
		row := w.judged[k]
		if row == nil {
			row = w.row(k)
		}
		if row == nil {
			continue
		}
		pod := row.Pod()
		var events []corev1.Event
		listed := false
		if !diagnosedEvents(w, k, pod) {
			var err error
			events, err = s.events(ctx, w, pod)
			if err != nil && !errors.Is(err, diagnose.ErrRefused) {
				fmt.Fprintf(s.stderr, "warning: %sevents of pod %s: %s\n", w.prefix(), k, text.SafeLine(err.Error(), 0))
			}
			listed = err == nil
		}
		x := check.Explain(pod, s.cfg.Check.Conditions, events)
		x.Context = w.label
		if gap, ok := w.eval.RolloutGap(k); ok {
			x.UnmetConditions = append(x.UnmetConditions, gap)
		}
		s.attachDiagnosis(w, k, &x, listed)
		s.attachProbeLog(ctx, w, k, pod, &x)
		out = append(out, x)
	}
	return out, omitted
}

// diagnosedEvents says the pod's diagnosis has read its Events: the
// summary, made right after the verdict, takes them from there rather
// than asking again.
func diagnosedEvents(w *clusterRun, key string, pod *corev1.Pod) bool {
	if w.diag == nil {
		return false
	}
	d := w.diag.byKey[key]
	return d != nil && d.EventsRead && d.Metadata.UID == pod.UID
}

// explainedKeys are the pods a failed check explains: the failing pod
// first, then those that miss a condition, at most maxExplained; the
// rest are counted.
func explainedKeys(w *clusterRun) ([]string, int) {
	v := w.eval.Verdict()
	keys := w.eval.UnsatisfiedKeys()
	if v.State == check.Failed {
		keys = append([]string{v.Failure.Key}, slices.DeleteFunc(keys, func(k string) bool { return k == v.Failure.Key })...)
	}
	if len(keys) > maxExplained {
		return keys[:maxExplained], len(keys) - maxExplained
	}
	return keys, 0
}

// explained are the keys explainedKeys explains.
func explained(w *clusterRun) []string {
	keys, _ := explainedKeys(w)
	return keys
}

// events lists a pod's Events, retrying what may pass, up to --max-retries
// attempts; a namespace whose events were refused is not asked again.
func (s *stream) events(ctx context.Context, w *clusterRun, pod *corev1.Pod) ([]corev1.Event, error) {
	if w.clients == nil {
		return nil, nil
	}
	list := func() ([]corev1.Event, error) {
		l, err := w.clients.Kube.CoreV1().Events(pod.Namespace).SearchWithContext(ctx, scheme.Scheme, pod)
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}
	if w.diagnoser != nil {
		list = func() ([]corev1.Event, error) { return w.diagnoser.Events(ctx, pod) }
	}
	events, err := retry.Do(ctx, retry.Backoff(), s.cfg.MaxRetries, diagnose.Retriable, list)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return events, nil
}
