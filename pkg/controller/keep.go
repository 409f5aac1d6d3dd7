package controller

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// Keep says which pods a controller delivers messages for, when the source
// cannot narrow them by itself: the pods of workloads whose selectors are
// only known once the workloads appear. It may keep more pods as the run
// goes on (then call Recheck); it is called from the workers and Recheck
// at once, so it must be safe for concurrent use.
type Keep func(meta *metav1.ObjectMeta) bool

// keep narrows one key's messages to what Options.Keep keeps, as the
// user sees them: a pod shown for the first time is added (an UPDATE is
// an ADD), a pod no longer kept, or gone, leaves with a GONE, and a pod
// never shown leaves without one. Work follows only the messages kept.
func (c *Controller) keep(k cache.ObjectName, msgs []message.Message) []message.Message {
	if c.opts.Keep == nil {
		return msgs
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := msgs[:0]
	for _, m := range msgs {
		shown := c.shown[k]
		switch {
		case m.Type == message.Gone:
			if shown {
				out = append(out, m)
				delete(c.shown, k)
			}
		case c.opts.Keep(m.Row.Meta()):
			if !shown && m.Type == message.Update {
				m.Type = message.Add
			}
			c.shown[k] = true
			out = append(out, m)
		case shown:
			out = append(out, message.Message{Type: message.Gone, Key: k, Row: m.Row})
			delete(c.shown, k)
		}
	}
	return out
}

// Recheck offers again the cached pods of namespace ("" for all) that Keep
// keeps now but that were never shown, so that a pod does not wait for its
// next change to be shown once Keep widens. The channel it returns closes
// once each of these pods has been delivered (or the run ends), so that a
// caller can judge what widened Keep after the pods it brought in. The
// cache is read under the lock that guards what is pending, so a newer
// state recorded meanwhile always wins.
func (c *Controller) Recheck(namespace string) <-chan struct{} {
	r := &recheck{keys: map[cache.ObjectName]bool{}, done: make(chan struct{})}
	if c.opts.Keep == nil {
		close(r.done)
		return r.done
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	objs := c.indexer.List()
	if namespace != "" {
		var err error
		if objs, err = c.indexer.ByIndex(cache.NamespaceIndex, namespace); err != nil {
			utilruntime.HandleError(fmt.Errorf("pods of namespace %s: %w", namespace, err))
		}
	}
	for _, obj := range objs {
		row, ok := obj.(*wire.PodRow)
		if !ok {
			continue
		}
		k := nameOf(row)
		if c.shown[k] || !c.opts.Keep(row.Meta()) {
			continue
		}
		r.keys[k] = true
		c.rechecks[k] = append(c.rechecks[k], r)
		if c.pending[k] == nil {
			// A key with a message pending is judged by Keep when a
			// worker takes it.
			c.pending[k] = &pending{typ: message.Update, row: row}
			c.queue.Add(k)
		}
	}
	if len(r.keys) == 0 {
		close(r.done)
	}
	return r.done
}

// recheck is one Recheck's pods not delivered yet.
type recheck struct {
	keys map[cache.ObjectName]bool
	done chan struct{}
}

// takeRechecks hands the rechecks waiting on k to the worker that takes
// k's pending message; c.mu is held.
func (c *Controller) takeRechecksLocked(k cache.ObjectName) []*recheck {
	rs := c.rechecks[k]
	delete(c.rechecks, k)
	return rs
}

// rechecked tells the rechecks that k's message was delivered.
func (c *Controller) rechecked(k cache.ObjectName, rs []*recheck) {
	if len(rs) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range rs {
		delete(r.keys, k)
		if len(r.keys) == 0 {
			close(r.done)
		}
	}
}
