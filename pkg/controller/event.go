package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/diagnosis"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// Kind names what happened to a pod, as the user sees it.
type Kind int

// The four event names of the contract, then the kinds --diagnose and
// --events add, in the order kinds holds them.
const (
	Sync Kind = iota
	Add
	Update
	Gone
	// Diagnosis: a pod in a failure state, its failed containers' last log
	// lines and its Events (--diagnose; always kept for a check's summary).
	Diagnosis
	// Warning and Normal: a Kubernetes Event about a matched pod
	// (--events), named by the Event's type. Not EVENT: that is the first
	// column's header, which readers and scripts (grep -v '^EVENT') take
	// for the header line.
	Warning
	Normal
)

// kinds is the one table of message kinds: the names printed in the EVENT
// column and counted in the summary. Everything that lists the kinds
// derives from it (their words and colours are the printers'). Pod kinds
// report a pod's state (always counted in the summary); the others report
// news about a pod and are counted only when shown.
var kinds = [...]struct {
	name string
	pod  bool
}{
	Sync:      {"SYNC", true},
	Add:       {"ADD", true},
	Update:    {"UPDATE", true},
	Gone:      {"GONE", true},
	Diagnosis: {"DIAGNOSIS", false},
	Warning:   {"WARNING", false},
	Normal:    {"NORMAL", false},
}

// Kinds lists every kind in the contract's order.
func Kinds() []Kind {
	out := make([]Kind, len(kinds))
	for i := range kinds {
		out[i] = Kind(i)
	}
	return out
}

func (k Kind) valid() bool { return k >= 0 && int(k) < len(kinds) }

// PodState reports whether the kind carries a pod's state (SYNC, ADD,
// UPDATE, GONE): the check judges these, and the summary always counts
// them.
func (k Kind) PodState() bool { return k.valid() && kinds[k].pod }

func (k Kind) String() string {
	if !k.valid() {
		return "UNKNOWN"
	}
	return kinds[k].name
}

// Message is one printed line's worth of news about one pod.
type Message struct {
	Kind Kind
	Key  cache.ObjectName
	// Row is the newest state for SYNC, ADD and UPDATE, and the last known
	// state for GONE; nil for a GONE whose last state nobody knows (a
	// deletion seen only as a tombstone without an object). It is shared
	// with the cache: read only. For a DIAGNOSIS it is the state that was
	// diagnosed; for an EVENT, nil.
	Row *wire.PodRow
	// Context names the kubeconfig context the pod is in, when a run
	// watches several; the run sets it, the controller never does.
	Context string
	// Diagnosis is set for a DIAGNOSIS message.
	Diagnosis *diagnosis.Diagnosis
	// Event is set for a WARNING or NORMAL message: the Event, its count
	// folded (see podsync); read only.
	Event *corev1.Event
}

// EventKind is the kind of a message about ev: WARNING for a Warning
// Event, NORMAL for any other.
func EventKind(ev *corev1.Event) Kind {
	if ev.Type == corev1.EventTypeWarning {
		return Warning
	}
	return Normal
}

// pending is what happened to one key since a worker last took it. Several
// events fold into one, so a busy pod yields one message with its newest
// state; only a deletion followed by a new pod of the same name needs more.
// Every row is the object the informer handed to its handler at that
// event, never a later read of the cache: a message then never shows a
// state that a later message will show again.
type pending struct {
	kind Kind
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
	switch newer.kind {
	case Update:
		if older.kind == Gone {
			// Cannot follow a deletion of the same pod; a new incarnation.
			return &pending{kind: Add, row: newer.row, gone: older.incarnations()}
		}
		return &pending{kind: older.kind, row: newer.row, listed: older.listed, gone: older.gone}
	case Gone:
		return &pending{kind: Gone, row: newer.row, gone: older.gone}
	default: // Add or Sync
		if older.kind == Gone {
			return &pending{kind: newer.kind, row: newer.row, listed: newer.listed, gone: older.incarnations()}
		}
		return newer
	}
}

// incarnations returns the GONE rows of a pending deletion, its own last.
func (p *pending) incarnations() []*wire.PodRow {
	return append(p.gone[:len(p.gone):len(p.gone)], p.row)
}
