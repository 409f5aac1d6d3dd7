package podsync

import (
	"slices"

	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// initialList is where one cluster's initial list stands, for the stream:
// whether the informer has delivered all of it, the pods printed from its
// pages before that (see pages.go), and the messages held back until it
// is complete (--sort-by).
type initialList struct {
	// done: the whole initial list has been delivered.
	done bool
	// streamed holds the pods printed from the list's pages, until the
	// informer delivers them; nil when the list is not printed by pages.
	streamed map[cache.ObjectName]*wire.PodRow
	// held holds messages back until the list is complete; see holds.
	held []message.Message
	// sortBy, several and watchOnly are the run's: what holds decides on.
	sortBy             string
	several, watchOnly bool
}

// holds reports whether m waits for the list to be complete: with
// --sort-by, the list's SYNC messages and, unless --watch-only, the news
// about its pods; with several clusters every message, so that each
// cluster's sorted list prints as one block, its changes after it,
// without waiting for the other clusters.
func (l *initialList) holds(m message.Message) bool {
	if l.done || l.sortBy == "" {
		return false
	}
	return l.several || !l.watchOnly && (m.Type == message.Sync || !m.Type.PodState())
}

// takeHeld returns the messages held back and forgets them: the SYNC
// messages first, ordered by --sort-by, then the others in the order they
// came.
func (l *initialList) takeHeld() ([]message.Message, error) {
	held := l.held
	l.held = nil
	if l.sortBy == "" {
		return held, nil
	}
	syncs := slices.DeleteFunc(slices.Clone(held), func(m message.Message) bool { return m.Type != message.Sync })
	if err := sortByField(syncs, l.sortBy); err != nil {
		return nil, err
	}
	rest := slices.DeleteFunc(held, func(m message.Message) bool { return m.Type == message.Sync })
	return slices.Concat(syncs, rest), nil
}

// restream is what a page shows of the pod of key: a SYNC the first time;
// for a pod seen in a page before (a list that failed half-way and was
// read again), what changed, if anything.
func (l *initialList) restream(key cache.ObjectName, row *wire.PodRow) []message.Message {
	old := l.streamed[key]
	l.streamed[key] = row
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
func (l *initialList) unstream(msgs []message.Message) []message.Message {
	if l.streamed == nil || len(msgs) == 0 || !msgs[0].Type.PodState() {
		return msgs // news about a pod (a diagnosis, an Event) is not its state
	}
	key := msgs[0].Key
	old := l.streamed[key]
	if old == nil {
		return msgs
	}
	delete(l.streamed, key)
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

// unlisted returns, once the informer has delivered the whole list, the
// pods printed from its pages that it never listed (a list that failed
// half-way, after which the pod was deleted): they are GONE.
func (l *initialList) unlisted() []message.Message {
	var gone []message.Message
	for key, row := range l.streamed {
		gone = append(gone, message.Message{Type: message.Gone, Key: key, Row: row})
	}
	l.streamed = nil
	return gone
}
