package cmd

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source"
)

// maxExplained bounds the summary of a failed check; the rest are counted.
const maxExplained = 10

// explain describes the failing pod and the pods that miss a condition,
// each with its most recent Events.
func (s *stream) explain(ctx context.Context, v check.Result) ([]check.PodExplanation, int) {
	keys := s.eval.UnsatisfiedKeys()
	if v.State == check.Failed {
		keys = append([]string{v.Failure.Key}, without(keys, v.Failure.Key)...)
	}
	omitted := 0
	if len(keys) > maxExplained {
		keys, omitted = keys[:maxExplained], len(keys)-maxExplained
	}
	// The run's context has ended; the explanation still gets a short while.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	fetch := eventFetcher{client: s.typed, limiter: workqueue.DefaultTypedControllerRateLimiter[string](), attempts: s.o.maxRetries}
	var out []check.PodExplanation
	for _, k := range keys {
		obj, ok, err := s.ctrl.Indexer().GetByKey(k)
		if err != nil || !ok {
			continue
		}
		pod := obj.(*source.PodRow).Pod
		events, err := fetch.events(ctx, pod)
		if err != nil {
			fmt.Fprintf(s.stderr, "warning: events of pod %s: %s\n", k, oneLine(err))
		}
		x := check.Explain(pod, s.o.spec.Conditions, events)
		if gap, ok := s.eval.RolloutGap(k); ok {
			x.UnmetConditions = append(x.UnmetConditions, gap)
		}
		out = append(out, x)
	}
	return out, omitted
}

func without(keys []string, k string) []string {
	out := keys[:0:0]
	for _, x := range keys {
		if x != k {
			out = append(out, x)
		}
	}
	return out
}

// eventFetcher lists a pod's Events, retrying failures with the same
// per-key rate limiting as the pod queue, up to --max-retries attempts.
type eventFetcher struct {
	client   kubernetes.Interface
	limiter  workqueue.TypedRateLimiter[string]
	attempts int
}

func (f eventFetcher) events(ctx context.Context, pod *corev1.Pod) ([]corev1.Event, error) {
	key := pod.Namespace + "/" + pod.Name
	defer f.limiter.Forget(key)
	selector := fields.Set{
		"involvedObject.kind": "Pod", "involvedObject.namespace": pod.Namespace,
		"involvedObject.name": pod.Name, "involvedObject.uid": string(pod.UID),
	}.String()
	for attempt := 1; ; attempt++ {
		list, err := f.client.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err == nil {
			return list.Items, nil
		}
		if attempt >= f.attempts {
			return nil, fmt.Errorf("list events after %d attempts: %w", attempt, err)
		}
		select {
		case <-time.After(f.limiter.When(key)):
		case <-ctx.Done():
			return nil, fmt.Errorf("list events: %w", ctx.Err())
		}
	}
}
