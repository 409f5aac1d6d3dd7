package source

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// A streaming list (WatchList: a watch that sends the current pods as
// ADDED events, then a bookmark) hands its pods to the reflector one by
// one, and the reflector keeps them until the bookmark. So that the first
// rows still print at once, the pods streamed before the bookmark are
// handed to the page observer in pages of the sizes a paginated list
// would have, as they arrive. A page is observed while the next one is
// read, and the last one before the bookmark reaches the reflector: once
// it has the bookmark, the informer hands every pod to a worker, and the
// stream must know by then which pods its pages have shown.

// initialPages gathers the initial events of one streaming list into
// pages for observe.
type initialPages struct {
	observe func(*PodRowList)
	rows    []wire.PodRow
	handed  int
	// busy is closed once the page handed last has been observed.
	busy chan struct{}
}

// streamsInitialEvents reports whether the watch asked for sends the
// current pods first (a streaming list).
func streamsInitialEvents(opts metav1.ListOptions) bool {
	return opts.SendInitialEvents != nil && *opts.SendInitialEvents
}

// initialPagesFor is what gathers the pages of a streaming list for the
// call's page observer, or nil.
func initialPagesFor(call Call, opts metav1.ListOptions) *initialPages {
	if call.Observe == nil || !streamsInitialEvents(opts) {
		return nil
	}
	return &initialPages{observe: call.Observe}
}

// see takes one event of the stream, and says whether the initial pods
// are all in.
func (p *initialPages) see(typ watch.EventType, obj runtime.Object) bool {
	row, ok := obj.(*wire.PodRow)
	switch {
	case !ok:
		return false
	case typ == watch.Added:
		if p.rows == nil {
			// A row is a big value: a page grown by doubling
			// copied each row several times.
			p.rows = make([]wire.PodRow, 0, p.size())
		}
		p.rows = append(p.rows, *row)
		if len(p.rows) >= p.size() {
			p.hand(false)
		}
	case endsInitialEvents(typ, obj):
		p.hand(true)
		return true
	}
	return false
}

// endsInitialEvents reports whether an event is the bookmark that ends a
// streaming list's current pods.
func endsInitialEvents(typ watch.EventType, obj runtime.Object) bool {
	row, ok := obj.(*wire.PodRow)
	return ok && typ == watch.Bookmark && row.Meta().Annotations[metav1.InitialEventsAnnotationKey] == "true"
}

// size is the size of the page being gathered: small first, so that the
// first rows print at once.
func (p *initialPages) size() int {
	if p.handed == 0 {
		return FirstPageSize
	}
	return PageSize
}

// hand hands the rows gathered to the observer, after the page before
// them; the last page is observed before hand returns. An empty last
// page still ends the pages, unless there were none.
func (p *initialPages) hand(last bool) {
	if p.busy != nil {
		<-p.busy
	}
	page := &PodRowList{Items: p.rows}
	p.handed += len(p.rows)
	p.rows = nil
	if last {
		if p.handed > 0 {
			p.observe(page)
		}
		return
	}
	// Not a continue token of the server: it says that more pages follow.
	page.Continue = "more"
	done := make(chan struct{})
	p.busy = done
	go func() {
		defer close(done)
		p.observe(page)
	}()
}
