package source

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// Retrying tries a list or watch again, inside the call, while the API
// server cannot be reached. Handed to the reflector, such failures would
// wait out its back-off, which grows to between 30 and 60 seconds, so a
// server back after a long outage would be noticed up to a minute late.
// Other errors (refusals, an expired resourceVersion) go to the reflector
// at once. Each attempt is still reported by the inner source, and the
// call gives up when its context ends.
type Retrying struct {
	Inner interface {
		cache.ListerWithContext
		cache.WatcherWithContext
	}
	// MaxDelay caps the wait between two attempts; 0 means 2 s.
	MaxDelay time.Duration
}

const firstRetryDelay = 250 * time.Millisecond

// IsWatchListSemanticsUnSupported keeps list + watch, as the inner sources do.
func (r *Retrying) IsWatchListSemanticsUnSupported() bool { return true }

// List implements cache.Lister.
func (r *Retrying) List(opts metav1.ListOptions) (runtime.Object, error) {
	return r.ListWithContext(context.Background(), opts)
}

// ListWithContext implements cache.ListerWithContext.
func (r *Retrying) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return retry(ctx, r.maxDelay(), func() (runtime.Object, error) { return r.Inner.ListWithContext(ctx, opts) })
}

// Watch implements cache.Watcher.
func (r *Retrying) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return r.WatchWithContext(context.Background(), opts)
}

// WatchWithContext implements cache.WatcherWithContext.
func (r *Retrying) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return retry(ctx, r.maxDelay(), func() (watch.Interface, error) { return r.Inner.WatchWithContext(ctx, opts) })
}

func (r *Retrying) maxDelay() time.Duration {
	if r.MaxDelay > 0 {
		return r.MaxDelay
	}
	return 2 * time.Second
}

func retry[T any](ctx context.Context, maxDelay time.Duration, call func() (T, error)) (T, error) {
	delay := min(firstRetryDelay, maxDelay)
	for {
		out, err := call()
		if err == nil || !Unreachable(err) || ctx.Err() != nil {
			return out, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return out, err
		case <-t.C:
		}
		delay = min(2*delay, maxDelay)
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
