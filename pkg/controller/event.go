package controller

import (
	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// pending is what happened to one key since a worker last took it. Several
// events fold into one, so a busy pod yields one message with its newest
// state; only a deletion followed by a new pod of the same name needs more.
// Every row is the object the informer handed to its handler at that
// event, never a later read of the cache: a message then never shows a
// state that a later message will show again.
type pending struct {
	typ message.Type
	// row is the newest state (SYNC, ADD, UPDATE) or the last state of a
	// deleted pod (GONE).
	row *wire.PodRow
	// listed is the state of the initial list for a SYNC; it differs from
	// row when updates were folded into the SYNC.
	listed *wire.PodRow
	// gone holds the last states of earlier incarnations of the key,
	// deleted before the current one was created; each is reported as
	// GONE first (nil: deleted with no known last state).
	gone []*wire.PodRow
}

// merge folds a newer event into what was pending before it.
func merge(older, newer *pending) *pending {
	switch {
	case older == nil:
		return newer
	case newer == nil:
		return older
	}
	switch newer.typ {
	case message.Update:
		if older.typ == message.Gone {
			// Cannot follow a deletion of the same pod; a new incarnation.
			return &pending{typ: message.Add, row: newer.row, gone: older.incarnations()}
		}
		return &pending{typ: older.typ, row: newer.row, listed: older.listed, gone: older.gone}
	case message.Gone:
		return &pending{typ: message.Gone, row: newer.row, gone: older.gone}
	default: // message.Add or message.Sync
		if older.typ == message.Gone {
			return &pending{typ: newer.typ, row: newer.row, listed: newer.listed, gone: older.incarnations()}
		}
		return newer
	}
}

// incarnations returns the GONE rows of a pending deletion, its own last.
func (p *pending) incarnations() []*wire.PodRow {
	return append(p.gone[:len(p.gone):len(p.gone)], p.row)
}
