package controller

import (
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source"
)

// Kind names what happened to a pod, as the user sees it.
type Kind int

// The four event names of the contract.
const (
	Sync Kind = iota
	Add
	Update
	Gone
)

func (k Kind) String() string {
	switch k {
	case Sync:
		return "SYNC"
	case Add:
		return "ADD"
	case Update:
		return "UPDATE"
	case Gone:
		return "GONE"
	}
	return "UNKNOWN"
}

// Message is one printed line's worth of news about one pod.
type Message struct {
	Kind Kind
	Key  string
	// Row is the newest state for SYNC, ADD and UPDATE, and the last known
	// state for GONE. It is shared with the cache: read only.
	Row *source.PodRow
}

// pending is what happened to one key since a worker last took it. Several
// events fold into one, so a busy pod yields one message with its newest
// state; only a deletion followed by a new pod of the same name needs more.
type pending struct {
	kind Kind
	// last is the final state of a deleted pod (kind Gone).
	last *source.PodRow
	// gone holds earlier incarnations of the key deleted before the current
	// one was created; each is reported as GONE first.
	gone []*source.PodRow
}

// merge folds a newer event into what was pending before it.
func merge(older, newer *pending) *pending {
	if older == nil {
		return newer
	}
	if newer == nil {
		return older
	}
	switch newer.kind {
	case Update:
		if older.kind == Gone {
			return &pending{kind: Update, gone: append(older.gone, older.last)}
		}
		return older
	case Gone:
		return &pending{kind: Gone, last: newer.last, gone: append(older.gone, newer.gone...)}
	default: // Add or Sync
		if older.kind == Gone {
			return &pending{kind: newer.kind, gone: append(older.gone, older.last)}
		}
		return newer
	}
}
