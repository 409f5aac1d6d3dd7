package retry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

func refused() error {
	return &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api/v1/pods", Err: fmt.Errorf("dial tcp: %w", syscall.ECONNREFUSED)}
}

// fast is Backoff shrunk for tests, with few steps: Do goes on at the cap
// after them.
func fast() wait.Backoff {
	b := Backoff()
	b.Duration, b.Cap, b.Steps = time.Millisecond, 2*time.Millisecond, 2
	return b
}

// failing answers its first n calls with err, then "ok".
func failing(n int, err error, calls *int) func() (string, error) {
	return func() (string, error) {
		*calls++
		if *calls <= n {
			return "", err
		}
		return "ok", nil
	}
}

func TestDoGoesOnPastTheStepsAtTheCap(t *testing.T) {
	calls := 0
	out, err := Do(context.Background(), fast(), 0, Unreachable, failing(10, refused(), &calls))
	if out != "ok" || err != nil || calls != 11 {
		t.Errorf("got %q, %v after %d calls, want ok after 11", out, err, calls)
	}
}

func TestDoStopsAfterItsAttempts(t *testing.T) {
	calls := 0
	_, err := Do(context.Background(), fast(), 3, Unreachable, failing(10, refused(), &calls))
	if !Unreachable(err) || calls != 3 {
		t.Errorf("got %v after %d calls, want the refusal after 3", err, calls)
	}
}

func TestDoHandsOtherErrorsOnAtOnce(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
	calls := 0
	if _, err := Do(context.Background(), fast(), 0, Unreachable, failing(10, forbidden, &calls)); !errors.Is(err, forbidden) || calls != 1 {
		t.Errorf("got %v after %d calls, want it at once", err, calls)
	}
}

func TestDoStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	calls := 0
	_, err := Do(ctx, fast(), 0, Unreachable, failing(1_000_000, refused(), &calls))
	if !Unreachable(err) || calls >= 1_000_000 {
		t.Errorf("after cancel: %v after %d calls, want the last refusal", err, calls)
	}
}

func TestUnreachable(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	for err, want := range map[error]bool{
		refused(): true,
		apierrors.NewServiceUnavailable("starting"):  true,
		apierrors.NewTooManyRequests("slow down", 1): true,
		apierrors.NewUnauthorized("bad token"):       false,
		apierrors.NewNotFound(pods, "web"):           false,
		errors.New("no such host"):                   false,
	} {
		if got := Unreachable(err); got != want {
			t.Errorf("Unreachable(%v) = %v, want %v", err, got, want)
		}
	}
}
