package podsync

import (
	"hash/maphash"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/events"
)

// eventCounts is the store the Events' reflector fills (--events). It
// keeps each Event's count, never the Event: what is news is an Event not
// seen before, or one whose count grew. An informer's cache would keep
// every Event the server keeps (an hour of them by default), which under
// churn was most of a run's memory; a count is about 40 bytes, and goes
// when the server deletes its Event. Only the reflector's goroutine uses
// it.
type eventCounts struct {
	// counts holds each Event's count, by a hash of its namespace/name.
	counts map[uint64]int32
	seed   maphash.Seed
	// listed: a list has been taken; the first is the initial one,
	// whose Events older than start are not news.
	listed bool
	start  time.Time
	send   func(*corev1.Event)
}

func newEventCounts(start time.Time, send func(*corev1.Event)) *eventCounts {
	return &eventCounts{counts: map[uint64]int32{}, seed: maphash.MakeSeed(), start: start, send: send}
}

func (c *eventCounts) key(ev *corev1.Event) uint64 {
	return maphash.String(c.seed, ev.Namespace+"/"+ev.Name)
}

// Add and Update hand on an Event that is news.
func (c *eventCounts) Add(obj any) error {
	if ev, ok := obj.(*corev1.Event); ok && c.take(ev, false) {
		c.sendOne(ev)
	}
	return nil
}

func (c *eventCounts) Update(obj any) error { return c.Add(obj) }

// Delete forgets an Event the server deleted.
func (c *eventCounts) Delete(obj any) error {
	if ev, ok := obj.(*corev1.Event); ok {
		delete(c.counts, c.key(ev))
	}
	return nil
}

// Replace takes a list: Events no longer listed are forgotten, and those
// that are news are handed on, as an informer would.
func (c *eventCounts) Replace(list []any, _ string) error {
	initial := !c.listed
	c.listed = true
	old := c.counts
	c.counts = make(map[uint64]int32, len(list))
	var news []*corev1.Event
	for _, obj := range list {
		ev, ok := obj.(*corev1.Event)
		if !ok {
			continue
		}
		n, known := old[c.key(ev)]
		if known {
			c.counts[c.key(ev)] = n
		}
		if c.take(ev, initial) {
			news = append(news, ev)
		}
	}
	for _, ev := range news {
		c.sendOne(ev)
	}
	return nil
}

// Resync has nothing to do: nothing is cached to hand out again.
func (c *eventCounts) Resync() error { return nil }

// take records ev's count and says whether ev is news.
func (c *eventCounts) take(ev *corev1.Event, initial bool) bool {
	k, n := c.key(ev), events.Count(ev)
	old, known := c.counts[k]
	c.counts[k] = n
	if known {
		return n > old
	}
	return !initial || !events.Time(ev).Before(c.start)
}

// sendOne hands on an Event without its managedFields, which are never
// printed. The Event is the reflector's own decoded copy.
func (c *eventCounts) sendOne(ev *corev1.Event) {
	ev.ManagedFields = nil
	c.send(ev)
}
