package podsync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// connection is the run's source.Reporter: it hears the result of every list
// and watch request and decides what the user is told.
//
//   - Before the first successful list, any error ends the run with exit 1:
//     the cluster cannot be used (unreachable, TLS, credentials, RBAC).
//   - Forbidden and Unauthorized end the run with exit 1 at any time: waiting
//     cannot fix them.
//   - A watch that is too old to resume (410 Gone, Expired) is not a lost
//     connection: the informer relists, and nothing needs to be said.
//   - Any other error after that means the connection was lost. It is said
//     once on stderr, with what fails, and the informer retries by itself;
//     while the retries go on failing, a line every stillLostEvery says for
//     how long (and what fails now, if that changed). The next request that
//     really succeeds (a list whose pods are all in, a watch the server
//     accepted) says the connection is back, and the informer's relist (or
//     the resumed watch) brings the changes made in between.
//   - A run that only needs the list (--once) ignores watch errors: a user
//     who may list but not watch can still take a snapshot, as with
//     `kubectl get pods`.
//   - In a run over several clusters, each has its own connection, named
//     in what it says; with --skip-unavailable, one that cannot be used
//     at start is skipped rather than ending the run.
type connection struct {
	ctx    context.Context
	errOut io.Writer
	fail   context.CancelCauseFunc
	now    func() time.Time // nil: time.Now
	// requestTimeout is --request-timeout, named when a request times out.
	requestTimeout time.Duration
	// listOnly is set for --once.
	listOnly bool
	// name is the context named in what is said, "" with one cluster.
	name string
	// skip, when set, is called instead of fail for a cluster that cannot
	// be used at start (--skip-unavailable); it ends c.ctx.
	skip func(error)
	// resource is what is listed and watched: "pods" when empty.
	resource string
	// quiet says nothing of a lost connection: another connection of the
	// same server says it (the workloads' watches beside the pods').
	quiet bool

	// changed, when set, is called after the connection is lost or back.
	changed func()
	// answered, when set, is called at every result: the cluster answers
	// (or fails in a way that is said).
	answered func()

	mu       sync.Mutex
	listed   bool
	lostAt   time.Time
	lostOnce bool // lostAt is set
	// saidAt and saidWhy are when the lost connection was last spoken of,
	// and what failed then.
	saidAt  time.Time
	saidWhy string
	// badPods are the pods whose bytes did not decode, said once each.
	badPods map[string]bool
}

// stillLostEvery is how often a connection still lost says for how long.
const stillLostEvery = 30 * time.Second

// Result implements source.Reporter. Giving up on the cluster (skip,
// fail) happens after the lock is released: a skip waits for the stream,
// which reads the connection's state under that lock.
func (c *connection) Result(verb string, err error) {
	if c.answered != nil {
		c.answered()
	}
	if giveUp := c.record(verb, err); giveUp != nil {
		giveUp()
	}
}

// record takes in one result and returns what gives up on the cluster, if
// it must be given up.
func (c *connection) record(verb string, err error) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.listed = c.listed || verb == "list"
		if c.lostOnce {
			c.lostOnce = false
			c.notify()
			fmt.Fprintf(c.errOut, "podsync: reconnected to the API server%s after %s; changes made meanwhile follow\n", c.of(), c.since(c.lostAt))
		}
		return nil
	}
	if c.ctx.Err() != nil {
		return nil // the run is ending; this is not the server's fault
	}
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || c.listOnly && verb == "watch" {
		return nil
	}
	why := c.describe(verb, err)
	switch {
	case !c.listed && c.skip != nil:
		return func() { c.skip(why) }
	case !c.listed || apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		if c.name != "" {
			why = &contextError{name: c.name, err: why}
		}
		return func() { c.fail(why) }
	}
	if c.quiet {
		return nil
	}
	now := c.clock()
	if !c.lostOnce {
		c.lostOnce, c.lostAt, c.saidAt, c.saidWhy = true, now, now, why.Error()
		c.notify()
		fmt.Fprintf(c.errOut, "podsync: lost the connection to the API server%s (%s); retrying\n", c.of(), why)
		return nil
	}
	if now.Sub(c.saidAt) < stillLostEvery {
		return nil
	}
	changed := ""
	if why.Error() != c.saidWhy {
		changed = fmt.Sprintf(" (now %s)", why)
	}
	c.saidAt, c.saidWhy = now, why.Error()
	fmt.Fprintf(c.errOut, "podsync: still no connection to the API server%s after %s%s; retrying\n",
		c.of(), check.RoundDuration(now.Sub(c.lostAt)), changed)
	return nil
}

// notify tells of a connection lost or back.
func (c *connection) notify() {
	if c.changed != nil {
		c.changed()
	}
}

// hasListed reports whether a list has succeeded (nil: none has).
func (c *connection) hasListed() bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.listed
}

// lostSince reports since when the connection is lost; false while it
// is up.
func (c *connection) lostSince() (time.Time, bool) {
	if c == nil {
		return time.Time{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lostAt, c.lostOnce
}

// BadPod implements source.BadPodReporter: a pod whose bytes do not
// decode is left out, said once on stderr with its namespace and name,
// and the run goes on with the other pods.
func (c *connection) BadPod(err *wire.PodError) {
	key := err.Namespace + "/" + err.Name
	c.mu.Lock()
	said := c.badPods[key]
	if c.badPods == nil {
		c.badPods = map[string]bool{}
	}
	c.badPods[key] = true
	c.mu.Unlock()
	if !said {
		fmt.Fprintf(c.errOut, "error: %s (from the API server%s); the pod is left out\n", text.OneLine(err.Error(), 0), c.of())
	}
}

// of names the context after "the API server", with several clusters.
func (c *connection) of() string {
	if c.name == "" {
		return ""
	}
	return " of context " + text.SafeLine(c.name, 0)
}

func (c *connection) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

func (c *connection) since(t time.Time) time.Duration {
	return check.RoundDuration(c.clock().Sub(t))
}

// requestError is a failed list or watch told in one line, keeping the
// original error for errors.Is and errors.As.
type requestError struct {
	text string
	err  error
}

func (e *requestError) Error() string { return e.text }
func (e *requestError) Unwrap() error { return e.err }

// describe names the request and the reason it failed, in one line:
//
//	list pods at https://127.0.0.1:6443: dial tcp 127.0.0.1:6443: connect: connection refused
//	list pods at https://127.0.0.1:6443: tls: failed to verify certificate: x509: ...
//	list pods at https://127.0.0.1:6443: no answer within 5s (--request-timeout)
//	list pods: the server did not accept the credentials (Unauthorized)
//	watch pods: pods is forbidden: User "u" cannot watch resource "pods" ...
//
// The request's URL is cut to its scheme and host: the query adds nothing a
// user can act on.
func (c *connection) describe(verb string, err error) error {
	what := verb + " pods"
	if c.resource != "" {
		what = verb + " " + c.resource
	}
	var message string
	var ue *url.Error
	switch {
	case apierrors.IsUnauthorized(err):
		message = fmt.Sprintf("%s: the server did not accept the credentials (%s)", what, detail(what, err))
	case errors.As(err, &ue) && ue.Timeout():
		message = fmt.Sprintf("%s at %s: %s", what, origin(ue.URL), c.noAnswer(ue.Err))
	case errors.As(err, &ue):
		message = fmt.Sprintf("%s at %s: %s", what, origin(ue.URL), text.OneLine(ue.Err.Error(), 0))
	default:
		message = fmt.Sprintf("%s: %s", what, detail(what, err))
	}
	return &requestError{text: message, err: err}
}

// noAnswer says that a request timed out, naming --request-timeout when
// it was the limit; other limits (TLS handshake, dial) keep Go's words.
func (c *connection) noAnswer(err error) string {
	if c.requestTimeout > 0 && (errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "Client.Timeout exceeded")) {
		return fmt.Sprintf("no answer within %s (--request-timeout)", c.requestTimeout)
	}
	return "no answer: " + text.OneLine(err.Error(), 0)
}

// detail is the error's text without a leading "list pods: " that the
// source may have added already.
func detail(what string, err error) string {
	return strings.TrimPrefix(text.OneLine(err.Error(), 0), what+": ")
}

// origin is scheme://host of a request URL, or the URL itself when it does
// not parse.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	return u.Scheme + "://" + u.Host
}
