// Package controller turns a pod informer into a stream of messages: an
// informer (list + watch, indexer cache) feeds a rate-limited workqueue of
// pod keys, and workers turn each key into SYNC, ADD, UPDATE or GONE.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/source"
)

// Handler receives the messages of one processed key, in order. An error
// makes the key be retried with rate limiting.
type Handler func(ctx context.Context, msgs []Message) error

// Options configure a Controller.
type Options struct {
	ListerWatcher cache.ListerWatcher
	Handler       Handler
	Workers       int
	MaxRetries    int
	Resync        time.Duration
	// RateLimiter defaults to client-go's controller rate limiter.
	RateLimiter workqueue.TypedRateLimiter[string]
	// OnDrop hears about keys given up after MaxRetries failures.
	OnDrop func(key string, err error)
}

// Controller owns the informer, the queue and the workers.
type Controller struct {
	opts     Options
	indexer  cache.Indexer
	informer cache.Controller
	queue    workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// pending holds, per key, what the next message must report.
	pending map[string]*pending
	// initial holds the keys of the initial list not yet fully processed.
	initial     map[string]struct{}
	synced      bool
	initialDone chan struct{}
}

// New builds a Controller; call Run to start it.
func New(opts Options) (*Controller, error) {
	if opts.ListerWatcher == nil || opts.Handler == nil {
		return nil, errors.New("controller: a ListerWatcher and a Handler are required")
	}
	if opts.Workers < 1 || opts.MaxRetries < 1 {
		return nil, fmt.Errorf("controller: workers (%d) and max retries (%d) must be at least 1", opts.Workers, opts.MaxRetries)
	}
	if opts.RateLimiter == nil {
		opts.RateLimiter = workqueue.DefaultTypedControllerRateLimiter[string]()
	}
	c := &Controller{
		opts:        opts,
		pending:     map[string]*pending{},
		initial:     map[string]struct{}{},
		initialDone: make(chan struct{}),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(opts.RateLimiter,
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "pods"}),
	}
	store, informer := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: opts.ListerWatcher,
		ObjectType:    &source.PodRow{},
		ResyncPeriod:  opts.Resync,
		Indexers:      cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		Transform:     source.StripManagedFields,
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

// InitialDone is closed once every pod of the initial list has been handled.
func (c *Controller) InitialDone() <-chan struct{} { return c.initialDone }

// Run starts the informer, waits for its first list, then runs the workers
// until ctx ends. It returns once every worker has finished its key.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	var informerDone sync.WaitGroup
	informerDone.Go(func() { c.informer.RunWithContext(ctx) })
	defer informerDone.Wait()
	defer c.queue.ShutDown()

	if !cache.WaitForCacheSync(ctx.Done(), c.informer.HasSynced) {
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
	row, ok := obj.(*source.PodRow)
	if !ok {
		return
	}
	kind := Add
	if isInInitialList {
		kind = Sync
	}
	c.record(key(row), &pending{kind: kind}, isInInitialList)
}

func (c *Controller) onUpdate(oldObj, newObj interface{}) {
	oldRow, ok1 := oldObj.(*source.PodRow)
	newRow, ok2 := newObj.(*source.PodRow)
	// Resyncs and relists repeat objects that did not change: say nothing.
	if !ok1 || !ok2 || oldRow.Pod.ResourceVersion == newRow.Pod.ResourceVersion {
		return
	}
	c.record(key(newRow), &pending{kind: Update}, false)
}

func (c *Controller) onDelete(obj interface{}) {
	// A deletion missed while the watch was down arrives as a tombstone
	// holding the last state the cache knew.
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	row, ok := obj.(*source.PodRow)
	if !ok {
		return
	}
	c.record(key(row), &pending{kind: Gone, last: row}, false)
}

func (c *Controller) record(k string, p *pending, initial bool) {
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
func (c *Controller) finishInitial(k string) {
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

func (c *Controller) take(k string) *pending {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pending[k]
	delete(c.pending, k)
	return p
}

// restore puts back what a failed attempt did not report, ahead of anything
// that happened to the key in the meantime.
func (c *Controller) restore(k string, p *pending) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending[k] = merge(p, c.pending[k])
}

// processNext handles one key; the queue never hands one key to two workers
// at once.
func (c *Controller) processNext(ctx context.Context) bool {
	k, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(k)
	p := c.take(k)
	err := c.handle(ctx, k, p)
	switch {
	case err == nil:
		c.queue.Forget(k)
		c.finishInitial(k)
	case ctx.Err() != nil:
		// Shutting down: nothing more will be printed.
		c.queue.Forget(k)
	case c.queue.NumRequeues(k)+1 >= c.opts.MaxRetries:
		c.queue.Forget(k)
		c.finishInitial(k)
		if c.opts.OnDrop != nil {
			c.opts.OnDrop(k, fmt.Errorf("dropped after %d failed attempts: %w", c.opts.MaxRetries, err))
		}
	default:
		c.restore(k, p)
		c.queue.AddRateLimited(k)
	}
	return true
}

func (c *Controller) handle(ctx context.Context, k string, p *pending) error {
	msgs := c.messages(k, p)
	if len(msgs) == 0 {
		return nil
	}
	return c.opts.Handler(ctx, msgs)
}

// messages turns what is pending for k into messages, reading the newest
// state from the cache.
func (c *Controller) messages(k string, p *pending) []Message {
	if p == nil {
		return nil
	}
	msgs := make([]Message, 0, len(p.gone)+1)
	for _, row := range p.gone {
		msgs = append(msgs, Message{Kind: Gone, Key: k, Row: row})
	}
	if p.kind == Gone {
		return append(msgs, Message{Kind: Gone, Key: k, Row: p.last})
	}
	obj, exists, err := c.indexer.GetByKey(k)
	if err != nil || !exists {
		// Deleted since: the delete handler has queued the key again.
		return msgs
	}
	return append(msgs, Message{Kind: p.kind, Key: k, Row: obj.(*source.PodRow)})
}

func key(obj runtime.Object) string {
	k, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("pod key: %w", err))
	}
	return k
}
