package podsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

type connCase struct {
	conn   *connection
	stderr *bytes.Buffer
	ctx    context.Context
}

func newConn(t *testing.T) *connCase {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	var stderr bytes.Buffer
	clock := time.Unix(0, 0)
	c := &connection{ctx: ctx, errOut: &stderr, fail: cancel, requestTimeout: 5 * time.Second,
		now: func() time.Time { clock = clock.Add(1500 * time.Millisecond); return clock }}
	return &connCase{conn: c, stderr: &stderr, ctx: ctx}
}

func refused() error {
	return &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api/v1/pods?watch=true", Err: fmt.Errorf("dial tcp 127.0.0.1:6443: %w", syscall.ECONNREFUSED)}
}

var podsResource = schema.GroupResource{Resource: "pods"}

// Losing the connection is said once however often the retries fail, and
// its return once; errors after the first list do not end the run.
func TestConnectionLostOnceAndBackOnce(t *testing.T) {
	c := newConn(t)
	c.conn.Result("list", nil)
	for range 5 {
		c.conn.Result("watch", refused())
		c.conn.Result("list", refused())
	}
	c.conn.Result("list", nil)
	c.conn.Result("watch", nil)
	want := "podsync: lost the connection to the API server (watch pods at https://127.0.0.1:6443: dial tcp 127.0.0.1:6443: connection refused); retrying\n" +
		"podsync: reconnected to the API server after 15s; changes made meanwhile follow\n"
	if got := c.stderr.String(); got != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", got, want)
	}
	if c.ctx.Err() != nil {
		t.Errorf("the run ended: %v", context.Cause(c.ctx))
	}
}

// A connection that stays lost says so once with what fails, then every
// half minute for how long, naming what fails only when that changed.
func TestConnectionSaysHowLongItIsLost(t *testing.T) {
	c := newConn(t)
	clock := time.Unix(0, 0)
	c.conn.now = func() time.Time { return clock }
	c.conn.Result("list", nil)
	busy := apierrors.NewServiceUnavailable("the server is starting")
	for i := range 50 { // a failure every 2 s for 100 s
		err := refused()
		if i >= 30 {
			err = busy
		}
		c.conn.Result("watch", err)
		clock = clock.Add(2 * time.Second)
	}
	c.conn.Result("watch", nil)
	want := "podsync: lost the connection to the API server (watch pods at https://127.0.0.1:6443: dial tcp 127.0.0.1:6443: connection refused); retrying\n" +
		"podsync: still no connection to the API server after 30s; retrying\n" +
		"podsync: still no connection to the API server after 1m0s (now watch pods: the server is starting); retrying\n" +
		"podsync: still no connection to the API server after 1m30s; retrying\n" +
		"podsync: reconnected to the API server after 1m40s; changes made meanwhile follow\n"
	if got := c.stderr.String(); got != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", got, want)
	}
}

// An expired watch is not a lost connection: nothing is said and the run
// goes on.
func TestConnectionExpiredWatchIsQuiet(t *testing.T) {
	c := newConn(t)
	c.conn.Result("list", nil)
	c.conn.Result("watch", apierrors.NewResourceExpired("too old resource version: 5 (10)"))
	c.conn.Result("watch", &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonGone}})
	if c.stderr.Len() != 0 || c.ctx.Err() != nil {
		t.Errorf("stderr %q, run ended: %v", c.stderr, c.ctx.Err())
	}
}

// Failing before the first list, or being refused at any time, ends the
// run with exit 1 and a one-line reason.
func TestConnectionEndsRun(t *testing.T) {
	cases := map[string]struct {
		listed bool
		verb   string
		err    error
		want   string
	}{
		"unreachable at start": {false, "list", refused(),
			"list pods at https://127.0.0.1:6443: dial tcp 127.0.0.1:6443: connection refused"},
		"timeout at start": {false, "list", &url.Error{Op: "Get", URL: "https://h:1/api", Err: context.DeadlineExceeded},
			"list pods at https://h:1: no answer within 5s (--request-timeout)"},
		"unauthorized": {true, "watch", apierrors.NewUnauthorized("Unauthorized"),
			"watch pods: the server did not accept the credentials (Unauthorized)"},
		"forbidden watch": {true, "watch", apierrors.NewForbidden(podsResource, "", errors.New(`User "u" cannot watch resource "pods"`)),
			`watch pods: pods is forbidden: User "u" cannot watch resource "pods"`},
		"source already named the request": {false, "list", fmt.Errorf("list pods: %w", apierrors.NewServiceUnavailable("down")),
			"list pods: down"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := newConn(t)
			if tc.listed {
				c.conn.Result("list", nil)
			}
			c.conn.Result(tc.verb, tc.err)
			cause := context.Cause(c.ctx)
			if cause == nil {
				t.Fatal("the run goes on")
			}
			if code := (Outcome{Verdict: Broken, Err: cause}).ExitCode(); code != ExitCluster || cause.Error() != tc.want {
				t.Errorf("exit %d %q, want exit 1 %q", code, cause.Error(), tc.want)
			}
			if !errors.Is(cause, tc.err) {
				t.Errorf("the cause does not wrap the original error")
			}
			if c.stderr.Len() != 0 {
				t.Errorf("stderr %q: the caller prints the reason", c.stderr)
			}
		})
	}
}

// --once needs only the list: a user who may not watch can still use it.
func TestConnectionListOnlyIgnoresWatch(t *testing.T) {
	c := newConn(t)
	c.conn.listOnly = true
	c.conn.Result("list", nil)
	c.conn.Result("watch", apierrors.NewForbidden(podsResource, "", errors.New("cannot watch")))
	if c.ctx.Err() != nil || c.stderr.Len() != 0 {
		t.Errorf("run ended (%v) or stderr %q", context.Cause(c.ctx), c.stderr)
	}
	c.conn.Result("list", apierrors.NewForbidden(podsResource, "", errors.New("cannot list")))
	if c.ctx.Err() == nil || !strings.Contains(context.Cause(c.ctx).Error(), "cannot list") {
		t.Errorf("a forbidden list must still end the run: %v", context.Cause(c.ctx))
	}
}

// A pod whose bytes do not decode is said once on stderr, with its
// namespace and name, however often the list and the watch bring it; the
// run goes on.
func TestBadPodIsSaidOnce(t *testing.T) {
	c := newConn(t)
	bad := &wire.PodError{Namespace: "ns", Name: "bad", Err: errors.New("unexpected EOF")}
	for range 3 {
		c.conn.BadPod(bad)
	}
	c.conn.BadPod(&wire.PodError{Namespace: "ns", Name: "other", Err: errors.New("unexpected EOF")})
	want := "error: decode pod ns/bad: unexpected EOF (from the API server); the pod is left out\n" +
		"error: decode pod ns/other: unexpected EOF (from the API server); the pod is left out\n"
	if got := c.stderr.String(); got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
	if c.ctx.Err() != nil {
		t.Errorf("a bad pod ended the run: %v", context.Cause(c.ctx))
	}
}
