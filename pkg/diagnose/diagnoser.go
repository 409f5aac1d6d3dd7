package diagnose

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/diagnosis"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// AttemptTime bounds one attempt (every request of one diagnosis): an
// attempt runs in a worker, so it must never hold the next message of its
// worker, and thus a verdict, for long; what did not answer in time is
// tried again later through the queue.
const AttemptTime = 2 * time.Second

// Options configure a Diagnoser.
type Options struct {
	Client kubernetes.Interface
	// LogLines is the tail length; 0 fetches no logs.
	LogLines int
	// Warn hears the lines said once per resource (a 403 on pods/log or
	// events). Cluster, when set, is named in them.
	Warn    io.Writer
	Cluster string
	// Now is the clock of event ages; nil is time.Now.
	Now func() time.Time
	// AttemptTime bounds one attempt; 0 is AttemptTime.
	AttemptTime time.Duration
}

// Diagnoser diagnoses the pods of one cluster. Its methods are safe for
// concurrent use by the workers; one key is never diagnosed by two
// workers at once (the queue sees to that).
type Diagnoser struct {
	opts Options

	mu   sync.Mutex
	seen Seen
	// partial holds per key the diagnosis being fetched, kept across
	// retries so that only what failed is asked again.
	partial map[string]*partial
	// forbidden holds the namespaces where a resource was refused, by
	// resource; warned, the resources already said.
	forbidden map[string]map[string]error
	warned    map[string]bool
}

type partial struct {
	uid types.UID
	d   *diagnosis.Diagnosis
	// todo are the reads still to do: container names, and eventsRead.
	todo map[string]bool
}

// eventsRead stands for the Events read in partial.todo; container names
// are DNS labels, so it cannot clash with one.
const eventsRead = "#events"

// The resources a diagnosis reads, as RBAC names them.
const (
	resourceLogs   = "pods/log"
	resourceEvents = "events"
)

// New returns a Diagnoser.
func New(opts Options) *Diagnoser {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Warn == nil {
		opts.Warn = io.Discard
	}
	if opts.AttemptTime == 0 {
		opts.AttemptTime = AttemptTime
	}
	return &Diagnoser{opts: opts, partial: map[string]*partial{}, forbidden: map[string]map[string]error{}, warned: map[string]bool{}}
}

// Diagnose does one attempt at diagnosing the pod of key in its newest
// state (nil: the pod is gone). It returns the diagnosis once complete;
// nil, nil when there is nothing to do (no failure, or this failure was
// diagnosed already); and a *RetryError when a read failed in a way that
// may pass, keeping what was read for the next attempt.
func (d *Diagnoser) Diagnose(ctx context.Context, key string, pod *corev1.Pod) (*diagnosis.Diagnosis, error) {
	d.mu.Lock()
	p, ok := d.start(key, pod)
	d.mu.Unlock()
	if !ok {
		return nil, nil
	}
	actx, cancel := context.WithTimeout(ctx, d.opts.AttemptTime)
	defer cancel()
	err := d.read(actx, key, pod, p)
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	if err != nil {
		return nil, err
	}
	return d.complete(key, pod.UID, p), nil
}

// start finds or begins the diagnosis of the pod's current failure.
func (d *Diagnoser) start(key string, pod *corev1.Pod) (*partial, bool) {
	if pod == nil {
		delete(d.partial, key)
		d.seen.Forget(key)
		return nil, false
	}
	f, failing := Of(pod)
	if !failing || d.seen.Covers(key, pod.UID, f) {
		delete(d.partial, key)
		return nil, false
	}
	if p := d.partial[key]; p != nil && p.uid == pod.UID && samePartsOf(p.d.Failure, f) {
		return p, true
	}
	p := &partial{uid: pod.UID, todo: map[string]bool{eventsRead: true}, d: &diagnosis.Diagnosis{
		Kind:     diagnosis.Kind,
		Metadata: diagnosis.Meta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Reason:   f.Reason, Failure: f, Events: []check.EventExplanation{},
	}}
	for _, c := range f.Containers {
		p.d.Containers = append(p.d.Containers, diagnosis.Container{Name: c.Name, Init: c.Init, Reason: c.Reason, RestartCount: c.RestartCount})
		if c.HasLog && d.opts.LogLines > 0 {
			p.todo[c.Name] = true
		}
	}
	d.partial[key] = p
	return p, true
}

func samePartsOf(a, b diagnosis.Failure) bool {
	if len(a.Parts) != len(b.Parts) {
		return false
	}
	for i := range a.Parts {
		if a.Parts[i] != b.Parts[i] {
			return false
		}
	}
	return true
}

// read does the reads still to do. A read that may pass is left to do
// and its error returned (the last one, with the longest Retry-After);
// any other result, a refusal included, is final.
func (d *Diagnoser) read(ctx context.Context, key string, pod *corev1.Pod, p *partial) error {
	var retry *RetryError
	f := p.d.Failure
	for i, c := range f.Containers {
		if !p.todo[c.Name] {
			continue
		}
		tail, err := d.readLog(ctx, pod, c)
		if r := d.settle(key, pod.Namespace, resourceLogs, fmt.Sprintf("log of container %q", c.Name), err); r != nil {
			retry = later(retry, r)
			continue
		}
		if err != nil {
			tail = &check.LogTail{Previous: c.Previous, Lines: []string{}, Error: text.OneLine(err.Error(), 0)}
		}
		d.mu.Lock()
		p.d.Containers[i].Logs = tail
		delete(p.todo, c.Name)
		d.mu.Unlock()
	}
	if p.todo[eventsRead] {
		events, err := d.readEvents(ctx, pod)
		if r := d.settle(key, pod.Namespace, resourceEvents, "events", err); r != nil {
			retry = later(retry, r)
		} else {
			d.mu.Lock()
			if err != nil {
				p.d.Missing = append(p.d.Missing, "events: "+text.OneLine(err.Error(), 0))
			} else {
				p.d.Events = check.ExplainEvents(d.opts.Now(), events)
				p.d.EventsRead = true
			}
			delete(p.todo, eventsRead)
			d.mu.Unlock()
		}
	}
	if retry != nil {
		return retry
	}
	return nil
}

// settle classifies the result of one read: nil for a result to keep
// (success or final error), a *RetryError for one that may pass. A
// refusal is remembered for the namespace and said once.
func (d *Diagnoser) settle(key, namespace, resource, what string, err error) *RetryError {
	switch {
	case err == nil:
		return nil
	case Retriable(err):
		after := retryAfter(err)
		klog.V(4).InfoS("Diagnosis read failed, will retry", "pod", key, "read", what, "retryAfter", after, "err", err)
		return &RetryError{Err: fmt.Errorf("diagnosis: %s: %w", what, err), After: after}
	case apierrors.IsForbidden(err):
		d.refused(namespace, resource, err)
	}
	klog.V(4).InfoS("Diagnosis read failed for good", "pod", key, "read", what, "err", err)
	return nil
}

// later keeps the error whose Retry-After is longest.
func later(a, b *RetryError) *RetryError {
	if a == nil || b.After >= a.After {
		return b
	}
	return a
}

// readLog reads a container's log unless the namespace refused logs before.
func (d *Diagnoser) readLog(ctx context.Context, pod *corev1.Pod, c diagnosis.FailedContainer) (*check.LogTail, error) {
	if err := d.knownRefusal(pod.Namespace, resourceLogs); err != nil {
		return nil, err
	}
	return fetchLog(ctx, d.opts.Client, pod, c, d.opts.LogLines)
}

func (d *Diagnoser) readEvents(ctx context.Context, pod *corev1.Pod) ([]corev1.Event, error) {
	if err := d.knownRefusal(pod.Namespace, resourceEvents); err != nil {
		return nil, err
	}
	return fetchEvents(ctx, d.opts.Client, pod)
}

func (d *Diagnoser) knownRefusal(namespace, resource string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.forbidden[resource][namespace]; err != nil {
		return fmt.Errorf("not asked: %s was refused in namespace %s: %w", resource, namespace, err)
	}
	return nil
}

// refused remembers a 403 and says it once per resource: RBAC will not
// change during the run, so neither a retry nor a second line helps.
func (d *Diagnoser) refused(namespace, resource string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.forbidden[resource] == nil {
		d.forbidden[resource] = map[string]error{}
	}
	if d.forbidden[resource][namespace] != nil {
		return // known already: err is the note knownRefusal made of it
	}
	d.forbidden[resource][namespace] = err
	if d.warned[resource] {
		return
	}
	d.warned[resource] = true
	where := ""
	if d.opts.Cluster != "" {
		where = " in context " + d.opts.Cluster
	}
	fmt.Fprintf(d.opts.Warn, "warning: cannot read %s%s: %s; diagnoses go on without them\n", resource, where, text.SafeLine(err.Error(), 0))
}

// complete records the diagnosis as done and hands it out.
func (d *Diagnoser) complete(key string, uid types.UID, p *partial) *diagnosis.Diagnosis {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.partial[key] == p {
		delete(d.partial, key)
	}
	d.seen.Add(key, uid, p.d.Failure)
	return p.d
}

// GiveUp ends the diagnosis of key after the last failed attempt: what
// was read is kept, each read still to do is noted with err, and the
// diagnosis is handed out like a complete one (nil when none was going
// on).
func (d *Diagnoser) GiveUp(key string, err error) *diagnosis.Diagnosis {
	d.mu.Lock()
	p := d.partial[key]
	if p != nil {
		why := text.OneLine(err.Error(), 0)
		for i := range p.d.Containers {
			if c := &p.d.Containers[i]; p.todo[c.Name] {
				c.Logs = &check.LogTail{Lines: []string{}, Error: why}
			}
		}
		if p.todo[eventsRead] {
			p.d.Missing = append(p.d.Missing, "events: "+why)
		}
		p.todo = nil
	}
	d.mu.Unlock()
	if p == nil {
		return nil
	}
	return d.complete(key, p.uid, p)
}

// Events lists the Events of a pod for an explanation, in one request;
// a namespace that refused events before is not asked again. The caller
// retries what Retriable accepts.
func (d *Diagnoser) Events(ctx context.Context, pod *corev1.Pod) ([]corev1.Event, error) {
	events, err := d.readEvents(ctx, pod)
	if apierrors.IsForbidden(err) {
		d.refused(pod.Namespace, resourceEvents, err)
		return nil, errors.Join(ErrRefused, err)
	}
	return events, err
}

// ErrRefused marks a read that RBAC refused and that was said already.
var ErrRefused = errors.New("refused")
