package source

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubectl-podsync/kubectl-podsync/internal/retry"
)

// failing answers its first calls with the errors given, then succeeds.
type failing struct {
	errs  []error
	calls int
}

func (f *failing) next() error {
	f.calls++
	if f.calls <= len(f.errs) {
		return f.errs[f.calls-1]
	}
	return nil
}

func (f *failing) source() Source {
	return Source{
		List: func(context.Context, metav1.ListOptions, Call) (*PodRowList, error) {
			if err := f.next(); err != nil {
				return nil, err
			}
			return &PodRowList{}, nil
		},
		Watch: func(context.Context, metav1.ListOptions, Call) (watch.Interface, error) {
			if err := f.next(); err != nil {
				return nil, err
			}
			return watch.NewEmptyWatch(), nil
		},
	}
}

// fast is the shared back-off shrunk for tests.
func fast() wait.Backoff {
	b := retry.Backoff()
	b.Duration, b.Cap = time.Millisecond, time.Millisecond
	return b
}

func refused() error {
	return &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api/v1/pods", Err: fmt.Errorf("dial tcp: %w", syscall.ECONNREFUSED)}
}

func TestRetryingWaitsOutAnUnreachableServer(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("starting")
	inner := &failing{errs: []error{refused(), unavailable, refused()}}
	r := inner.source().Retrying(fast())
	if _, err := r.Watch(context.Background(), metav1.ListOptions{}, Call{}); err != nil {
		t.Fatalf("watch after the server came back: %v", err)
	}
	if inner.calls != 4 {
		t.Errorf("watch was tried %d times, want 4 (3 failures, then success)", inner.calls)
	}
	inner = &failing{errs: []error{refused()}}
	r = inner.source().Retrying(fast())
	if _, err := r.List(context.Background(), metav1.ListOptions{}, Call{}); err != nil || inner.calls != 2 {
		t.Errorf("list: %v after %d calls, want success after 2", err, inner.calls)
	}
}

func TestRetryingHandsOtherErrorsOnAtOnce(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	for _, want := range []error{
		apierrors.NewForbidden(pods, "", errors.New("no")),
		apierrors.NewUnauthorized("bad token"),
		apierrors.NewResourceExpired("too old resource version"),
	} {
		inner := &failing{errs: []error{want}}
		r := inner.source().Retrying(fast())
		if _, err := r.Watch(context.Background(), metav1.ListOptions{}, Call{}); !errors.Is(err, want) || inner.calls != 1 {
			t.Errorf("%v: got %v after %d calls, want it at once", want, err, inner.calls)
		}
	}
}

func TestRetryingStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	errs := make([]error, 1000)
	for i := range errs {
		errs[i] = refused()
	}
	inner := &failing{errs: errs}
	b := fast()
	b.Cap = 10 * time.Millisecond
	r := inner.source().Retrying(b)
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := r.List(ctx, metav1.ListOptions{}, Call{})
	if err == nil || !retry.Unreachable(err) || inner.calls >= len(errs) {
		t.Errorf("after cancel: %v after %d calls, want the last refusal, well before the 1000th call", err, inner.calls)
	}
}
