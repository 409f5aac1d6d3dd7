// Package message holds what the controller hands the printers and the
// checks: one Message per printed line, and the kinds of news it carries.
// It is a leaf, so that the printers need not import the informer's
// package to read what it delivers.
package message

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
