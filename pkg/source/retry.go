package source

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubectl-podsync/kubectl-podsync/internal/retry"
)

// Retrying tries a list or watch again, inside the call, while the API
// server cannot be reached (retry.Unreachable). Other errors (refusals, an
// expired resourceVersion) go to the reflector at once. Each attempt is
// still reported by the inner source, and the call gives up when its
// context ends.
func (s Source) Retrying(b wait.Backoff) Source {
	return Source{
		StreamsLists: s.StreamsLists,
		List: func(ctx context.Context, opts metav1.ListOptions, call Call) (*PodRowList, error) {
			return retry.Do(ctx, b, 0, retry.Unreachable, func() (*PodRowList, error) { return s.List(ctx, opts, call) })
		},
		Watch: func(ctx context.Context, opts metav1.ListOptions, call Call) (watch.Interface, error) {
			return retry.Do(ctx, b, 0, retry.Unreachable, func() (watch.Interface, error) { return s.Watch(ctx, opts, call) })
		},
	}
}
