// Package retry holds podsync's own retry loop, its one back-off and what
// counts as a server that cannot be reached for now: shared by the pod
// source, the targets' informers, the diagnosis and the rollout lookups.
package retry

import (
	"context"
	"math"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Backoff is the one back-off of podsync's own retry loops (a list or watch
// while the server is unreachable, a Deployment lookup, an explanation's
// Events): from a quarter second, doubling, to at most 2 s between
// attempts. Short enough that a server back after an outage is noticed
// within 2 s, where client-go's reflector would wait out a back-off that
// grows to a minute. Do bounds the attempts.
func Backoff() wait.Backoff {
	return wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Cap: 2 * time.Second, Steps: math.MaxInt32}
}

// Do calls try until it succeeds, fails with an error that retriable
// refuses, has been tried attempts times (0: no limit), or ctx ends; it
// waits b's delays in between, and returns the last answer. It steps b
// with DelayFunc, which stays at the cap once reached. client-go's
// retry.OnError does not fit: it takes no context, and like
// wait.ExponentialBackoff it gives up when the steps run out.
func Do[T any](ctx context.Context, b wait.Backoff, attempts int, retriable func(error) bool, try func() (T, error)) (T, error) {
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
