package podsync

import (
	"context"
	"sync/atomic"

	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/output"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source"
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
	if c.list.done {
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
		if end, over := s.handle(c, c.list.restream(key, row)); over {
			// What was judged and printed before the end is not lost.
			s.flush()
			return end, true
		}
	}
	return s.flush()
}
