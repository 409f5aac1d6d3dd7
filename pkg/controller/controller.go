// Package controller turns a pod informer into a stream of messages: an
// informer (list + watch, indexer cache) feeds a rate-limited workqueue of
// pod keys, and workers turn each key into SYNC, ADD, UPDATE or GONE, then
// do the key's own work (a diagnosis), retrying that work with rate
// limiting.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// Deliver hands the messages of one key, in order, to the consumer. It
// returns an error only when the run is ending and nothing more will be
// taken; a message is delivered once, never again on a retry.
type Deliver func(ctx context.Context, msgs []message.Message) error

// Work is a key's own work once its messages are delivered, given the
// newest state delivered for it (nil when the pod is gone). An error sends
// the key back to the rate-limited queue, until MaxRetries attempts.
type Work func(ctx context.Context, key cache.ObjectName, row *wire.PodRow) error

// Options configure a Controller.
type Options struct {
	ListerWatcher cache.ListerWatcher
	Deliver       Deliver
	// Work is optional.
	Work       Work
	Workers    int
	MaxRetries int
	Resync     time.Duration
	// HideSync says SYNC messages are not shown (--watch-only): a change
	// folded into a SYNC is then delivered as an UPDATE of its own after
	// the SYNC, rather than lost inside it.
	HideSync bool
	// KeepManagedFields keeps managedFields in the cache
	// (--show-managed-fields); they are stripped otherwise.
	KeepManagedFields bool
	// RateLimiter spaces the attempts of a key's work; it defaults to
	// client-go's controller rate limiter. An error with a RetryAfter()
	// time.Duration method waits at least that long.
	RateLimiter workqueue.TypedRateLimiter[cache.ObjectName]
	// OnDrop hears about keys whose work was given up after MaxRetries
	// failed attempts.
	OnDrop func(key cache.ObjectName, err error)
	// Keep, when set, narrows the messages to the pods it keeps (see Keep).
	Keep Keep
}

// Controller owns the informer, the queue and the workers.
type Controller struct {
	opts     Options
	indexer  cache.Indexer
	informer cache.Controller
	queue    workqueue.TypedRateLimitingInterface[cache.ObjectName]

	mu sync.Mutex
	// pending holds, per key, what the next message must report.
	pending map[cache.ObjectName]*pending
	// retry holds the keys whose work failed and is due again.
	retry map[cache.ObjectName]*wire.PodRow
	// initial holds the keys of the initial list not yet delivered.
	initial map[cache.ObjectName]struct{}
	// shown holds the keys Keep kept whose pod has not left since;
	// rechecks the Rechecks waiting for a key's next delivery.
	shown       map[cache.ObjectName]bool
	rechecks    map[cache.ObjectName][]*recheck
	synced      bool
	initialDone chan struct{}
}

// New builds a Controller; call Run to start it.
func New(opts Options) (*Controller, error) {
	if opts.ListerWatcher == nil || opts.Deliver == nil {
		return nil, errors.New("controller: a ListerWatcher and a Deliver func are required")
	}
	if opts.Workers < 1 || opts.MaxRetries < 1 {
		return nil, fmt.Errorf("controller: workers (%d) and max retries (%d) must be at least 1", opts.Workers, opts.MaxRetries)
	}
	if opts.RateLimiter == nil {
		opts.RateLimiter = workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]()
	}
	c := &Controller{
		opts:        opts,
		pending:     map[cache.ObjectName]*pending{},
		retry:       map[cache.ObjectName]*wire.PodRow{},
		initial:     map[cache.ObjectName]struct{}{},
		shown:       map[cache.ObjectName]bool{},
		rechecks:    map[cache.ObjectName][]*recheck{},
		initialDone: make(chan struct{}),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(opts.RateLimiter,
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "pods"}),
	}
	transform := wire.StripManagedFields
	if opts.KeepManagedFields {
		transform = nil
	}
	store, informer := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: opts.ListerWatcher,
		ObjectType:    &wire.PodRow{},
		ResyncPeriod:  opts.Resync,
		Indexers:      cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		Transform:     transform,
		Handler: cache.ResourceEventHandlerDetailedFuncs{
			AddFunc:    c.onAdd,
			UpdateFunc: c.onUpdate,
			DeleteFunc: c.onDelete,
		},
	})
	// With Indexers set, the store is an Indexer.
	c.indexer, c.informer = store.(cache.Indexer), informer
	return c, nil
}

// Indexer is the informer's cache: the pods that match now.
func (c *Controller) Indexer() cache.Indexer { return c.indexer }

// InitialDone is closed once every pod of the initial list has been
// delivered.
func (c *Controller) InitialDone() <-chan struct{} { return c.initialDone }

// Run starts the informer, waits for its first list, then runs the workers
// until ctx ends. It returns once every worker has finished its key.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	var informerDone sync.WaitGroup
	informerDone.Go(func() { c.informer.RunWithContext(ctx) })
	defer informerDone.Wait()
	defer c.queue.ShutDown()

	// WaitFor wakes as the list is in; WaitForCacheSync polls every
	// 100 ms, which a small --once run would spend waiting.
	if !cache.WaitFor(ctx, "", c.informer.HasSyncedChecker()) {
		return fmt.Errorf("wait for the pod cache to sync: %w", context.Cause(ctx))
	}
	c.markSynced()

	var workers sync.WaitGroup
	for range c.opts.Workers {
		workers.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	workers.Wait()
	return nil
}

func (c *Controller) onAdd(obj interface{}, isInInitialList bool) {
	row, ok := obj.(*wire.PodRow)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("pod informer added a %T", obj))
		return
	}
	p := &pending{typ: message.Add, row: row}
	if isInInitialList {
		p.typ, p.listed = message.Sync, row
	}
	c.record(nameOf(row), p, isInInitialList)
}

func (c *Controller) onUpdate(oldObj, newObj interface{}) {
	oldRow, ok1 := oldObj.(*wire.PodRow)
	newRow, ok2 := newObj.(*wire.PodRow)
	if !ok1 || !ok2 {
		utilruntime.HandleError(fmt.Errorf("pod informer updated a %T to a %T", oldObj, newObj))
		return
	}
	k := nameOf(newRow)
	switch {
	case oldRow.Meta().UID != newRow.Meta().UID:
		// Deleted and created again under the same name while the watch
		// was down: the relist hands over both as one update.
		c.record(k, &pending{typ: message.Gone, row: oldRow}, false)
		c.record(k, &pending{typ: message.Add, row: newRow}, false)
	case oldRow.Meta().ResourceVersion != newRow.Meta().ResourceVersion:
		c.record(k, &pending{typ: message.Update, row: newRow}, false)
	}
	// Resyncs and relists repeat objects that did not change: say nothing.
}

func (c *Controller) onDelete(obj interface{}) {
	// A deletion missed while the watch was down arrives as a tombstone
	// holding the last state the cache knew, if any.
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		row, _ := t.Obj.(*wire.PodRow)
		k, err := cache.ParseObjectName(t.Key)
		if err != nil {
			utilruntime.HandleError(fmt.Errorf("pod tombstone %q: %w", t.Key, err))
			return
		}
		c.record(k, &pending{typ: message.Gone, row: row}, false)
		return
	}
	row, ok := obj.(*wire.PodRow)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("pod informer deleted a %T", obj))
		return
	}
	c.record(nameOf(row), &pending{typ: message.Gone, row: row}, false)
}

func (c *Controller) record(k cache.ObjectName, p *pending, initial bool) {
	c.mu.Lock()
	c.pending[k] = merge(c.pending[k], p)
	if initial {
		c.initial[k] = struct{}{}
	}
	c.mu.Unlock()
	c.queue.Add(k)
}

func (c *Controller) markSynced() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.synced = true
	c.checkInitialLocked()
}

// finishInitial notes that key k will never again be part of the initial list.
func (c *Controller) finishInitial(k cache.ObjectName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.initial, k)
	c.checkInitialLocked()
}

func (c *Controller) checkInitialLocked() {
	if !c.synced || len(c.initial) > 0 {
		return
	}
	select {
	case <-c.initialDone:
	default:
		close(c.initialDone)
	}
}

// take removes what is pending for k, the work left to retry, and the
// Rechecks waiting for k's delivery.
func (c *Controller) take(k cache.ObjectName) (*pending, *wire.PodRow, bool, []*recheck) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pending[k]
	delete(c.pending, k)
	row, retry := c.retry[k]
	delete(c.retry, k)
	return p, row, retry, c.takeRechecksLocked(k)
}

// processNext handles one key: it delivers the key's messages, once, then
// does the key's work; only the work is retried. The queue never hands one
// key to two workers at once, so a pod's messages keep their order.
func (c *Controller) processNext(ctx context.Context) bool {
	k, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(k)
	p, row, retry, rechecks := c.take(k)
	msgs := c.keep(k, messages(k, p, c.opts.HideSync))
	if len(msgs) > 0 {
		if err := c.opts.Deliver(ctx, msgs); err != nil {
			c.queue.Forget(k)
			return true // the run is ending
		}
		row, retry = msgs[len(msgs)-1].Row, true
		if msgs[len(msgs)-1].Type == message.Gone {
			row = nil
		}
	}
	c.rechecked(k, rechecks)
	c.finishInitial(k)
	if !retry || c.opts.Work == nil {
		c.queue.Forget(k)
		return true
	}
	c.work(ctx, k, row)
	return true
}

func (c *Controller) work(ctx context.Context, k cache.ObjectName, row *wire.PodRow) {
	err := c.opts.Work(ctx, k, row)
	attempt := c.queue.NumRequeues(k) + 1
	switch {
	case err == nil || ctx.Err() != nil:
		c.queue.Forget(k)
	case attempt >= c.opts.MaxRetries:
		c.queue.Forget(k)
		klog.V(4).InfoS("Gave up on the work of a pod key", "key", k, "attempts", attempt, "err", err)
		if c.opts.OnDrop != nil {
			c.opts.OnDrop(k, fmt.Errorf("gave up after %d failed attempts: %w", c.opts.MaxRetries, err))
		}
	default:
		c.mu.Lock()
		if _, newer := c.pending[k]; !newer {
			c.retry[k] = row
		}
		c.mu.Unlock()
		delay := c.opts.RateLimiter.When(k)
		if after := retryAfter(err); after > delay {
			delay = after
		}
		klog.V(4).InfoS("Retrying the work of a pod key", "key", k, "attempt", attempt, "delay", delay, "err", err)
		c.queue.AddAfter(k, delay)
	}
}

// retryAfter is the least delay an error asks for before the next attempt
// (a server's Retry-After), 0 if none.
func retryAfter(err error) time.Duration {
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) {
		return ra.RetryAfter()
	}
	return 0
}

// messages turns what is pending for k into messages: the GONE of earlier
// incarnations first, then the current one. A SYNC that is not shown
// (HideSync) and had changes folded into it is followed by an UPDATE with
// the newest state, so that the change is not hidden with it.
func messages(k cache.ObjectName, p *pending, hideSync bool) []message.Message {
	if p == nil {
		return nil
	}
	msgs := make([]message.Message, 0, len(p.gone)+2)
	for _, row := range p.gone {
		msgs = append(msgs, message.Message{Type: message.Gone, Key: k, Row: row})
	}
	if p.typ == message.Sync && hideSync && p.listed != p.row {
		msgs = append(msgs, message.Message{Type: message.Sync, Key: k, Row: p.listed})
		return append(msgs, message.Message{Type: message.Update, Key: k, Row: p.row})
	}
	return append(msgs, message.Message{Type: p.typ, Key: k, Row: p.row})
}

func nameOf(row *wire.PodRow) cache.ObjectName {
	return cache.ObjectName{Namespace: row.Meta().Namespace, Name: row.Meta().Name}
}
