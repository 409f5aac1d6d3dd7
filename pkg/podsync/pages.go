package podsync

import (
	"context"
	"sync/atomic"

	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/output"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// The initial list is printed page by page as it arrives, rather than once
// the informer holds all of it: on a big cluster the first rows show in a
// second instead of after the whole list. The informer still gets the whole
// list and hands each pod to a worker as a SYNC; the stream knows which pods
// it printed from the pages and lets each such SYNC pass silently. So that
// nothing folded into such a SYNC is lost, the controller splits it as it
// does for --watch-only: the listed state, then an UPDATE with the newest.

// page is one page of a cluster's initial list, on its way to the stream;
// done is closed once the stream is through with its rows.
type page struct {
	cluster int
	list    *source.PodRowList
	done    chan struct{}
}

// pageObserver hands the stream each page of cluster i's first whole list,
// and waits until the stream has printed it (the reflector changes the
// rows once the list is complete). Later lists (relists) are not shown.
func (s *stream) pageObserver(ctx context.Context, i int) func(*source.PodRowList) {
	var listed atomic.Bool
	return func(list *source.PodRowList) {
		if listed.Load() {
			return
		}
		p := page{cluster: i, list: list, done: make(chan struct{})}
		select {
		case s.pages <- p:
		case <-ctx.Done():
			return
		}
		select {
		case <-p.done:
		case <-ctx.Done():
		}
		if list.Continue == "" {
			listed.Store(true)
		}
	}
}

// handlePage judges and prints the pods of one page as SYNC messages, and
// lets the page's rows out at once.
func (s *stream) handlePage(c *clusterRun, p page) (ending, bool) {
	defer close(p.done)
	if c.initial {
		return ending{}, false // a relist: its changes come from the informer
	}
	if s.several || s.writer.Shape() != output.Table {
		// With several clusters a page prints as one aligned block, and
		// lines of other clusters go out as they come; JSON, YAML, names
		// and templates are written in batches rather than pod by pod.
		s.writer.SetBuffered(true)
		defer s.writer.SetBuffered(false)
	}
	for i := range p.list.Items {
		row := &p.list.Items[i]
		key := cache.ObjectName{Namespace: row.Meta().Namespace, Name: row.Meta().Name}
		msgs := s.restream(c, key, row)
		c.streamed[key] = row
		if end, over := s.handle(c, msgs); over {
			// What was judged and printed before the end is not lost.
			s.flush()
			return end, true
		}
	}
	return s.flush()
}

// restream: a pod seen in a page before (a list that failed half-way and
// was read again) is printed again only if it changed.
func (s *stream) restream(c *clusterRun, key cache.ObjectName, row *wire.PodRow) []message.Message {
	old := c.streamed[key]
	switch {
	case old == nil:
		return []message.Message{{Type: message.Sync, Key: key, Row: row}}
	case old.Meta().UID != row.Meta().UID:
		return []message.Message{{Type: message.Gone, Key: key, Row: old}, {Type: message.Sync, Key: key, Row: row}}
	case old.Meta().ResourceVersion != row.Meta().ResourceVersion:
		return []message.Message{{Type: message.Update, Key: key, Row: row}}
	}
	return nil
}

// unstream takes the messages of one key from a worker and drops or turns
// what the pages have shown already: the SYNC of a streamed state is
// silent, a SYNC of a newer state is an UPDATE, and a pod of another UID
// than the streamed one is GONE first.
func (s *stream) unstream(c *clusterRun, msgs []message.Message) []message.Message {
	if c.streamed == nil || len(msgs) == 0 || !msgs[0].Type.PodState() {
		return msgs // news about a pod (a diagnosis, an Event) is not its state
	}
	key := msgs[0].Key
	old := c.streamed[key]
	if old == nil {
		return msgs
	}
	delete(c.streamed, key)
	out := make([]message.Message, 0, len(msgs)+1)
	for i, m := range msgs {
		switch {
		case i > 0 || m.Row == nil:
			out = append(out, m)
		case m.Row.Meta().UID != old.Meta().UID:
			out = append(out, message.Message{Type: message.Gone, Key: key, Row: old}, m)
		case m.Type != message.Sync:
			out = append(out, m)
		case m.Row.Meta().ResourceVersion != old.Meta().ResourceVersion:
			m.Type = message.Update
			out = append(out, m)
		}
	}
	return out
}

// forgetStreamed ends the pages of c once its initial list is complete: a
// pod shown from a page that the informer never listed (a list that failed
// half-way, after which the pod was deleted) is GONE.
func (s *stream) forgetStreamed(c *clusterRun) (ending, bool) {
	left := c.streamed
	c.streamed = nil
	for key, row := range left {
		if end, over := s.handle(c, []message.Message{{Type: message.Gone, Key: key, Row: row}}); over {
			return end, true
		}
	}
	return ending{}, false
}
