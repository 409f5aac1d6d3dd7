package source

import (
	"context"
	"math"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
)

// Backoff is the one back-off of podsync's own retry loops (a list or watch
// while the server is unreachable, a Deployment lookup, an explanation's
// Events): from a quarter second, doubling, to at most 2 s between
// attempts. Short enough that a server back after an outage is noticed
// within 2 s, where client-go's reflector would wait out a back-off that
// grows to a minute. Retry bounds the attempts.
func Backoff() wait.Backoff {
	return wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Cap: 2 * time.Second, Steps: math.MaxInt32}
}

// Retrying tries a list or watch again, inside the call, while the API
// server cannot be reached. Other errors (refusals, an expired
// resourceVersion) go to the reflector at once. Each attempt is still
// reported by the inner source, and the call gives up when its context
// ends.
func (s Source) Retrying(b wait.Backoff) Source {
	return Source{
		StreamsLists: s.StreamsLists,
		List: func(ctx context.Context, opts metav1.ListOptions) (*PodRowList, error) {
			return Retry(ctx, b, 0, Unreachable, func() (*PodRowList, error) { return s.List(ctx, opts) })
		},
		Watch: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return Retry(ctx, b, 0, Unreachable, func() (watch.Interface, error) { return s.Watch(ctx, opts) })
		},
	}
}

// Retry calls try until it succeeds, fails with an error that retriable
// refuses, has been tried attempts times (0: no limit), or ctx ends; it
// waits b's delays in between, and returns the last answer. It steps b
// with DelayFunc, which stays at the cap once reached, where
// wait.ExponentialBackoff would stop.
func Retry[T any](ctx context.Context, b wait.Backoff, attempts int, retriable func(error) bool, try func() (T, error)) (T, error) {
	next := b.DelayFunc()
	for n := 1; ; n++ {
		out, err := try()
		if err == nil || !retriable(err) || n == attempts || ctx.Err() != nil {
			return out, err
		}
		t := time.NewTimer(next())
		select {
		case <-ctx.Done():
			t.Stop()
			return out, err
		case <-t.C:
		}
	}
}

// Unreachable reports whether err means the server could not be reached or
// could not answer for now, so that the same request may work soon.
func Unreachable(err error) bool {
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) ||
		utilnet.IsProbableEOF(err) || utilnet.IsHTTP2ConnectionLost(err) || utilnet.IsTimeout(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
}
