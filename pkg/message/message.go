// Package message holds what the controller hands the printers and the
// checks: one Message per printed line, and the types of news it carries.
// It is a leaf, so that the printers need not import the informer's
// package to read what it delivers.
package message

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/diagnosis"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// Type names what happened to a pod, as the user sees it.
type Type int

// The four event names of the contract, then the types --diagnose and
// --events add, in the order table holds them.
const (
	Sync Type = iota
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

// table is the one list of message types: the names printed in the EVENT
// column and counted in the summary. Everything that lists the types
// derives from it (their words and colours are the printers'). Pod types
// report a pod's state (always counted in the summary); the others report
// news about a pod and are counted only when shown.
var table = [...]struct {
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

// Types lists every type in the contract's order.
func Types() []Type {
	out := make([]Type, len(table))
	for i := range table {
		out[i] = Type(i)
	}
	return out
}

func (t Type) valid() bool { return t >= 0 && int(t) < len(table) }

// PodState reports whether the type carries a pod's state (SYNC, ADD,
// UPDATE, GONE): the check judges these, and the summary always counts
// them.
func (t Type) PodState() bool { return t.valid() && table[t].pod }

func (t Type) String() string {
	if !t.valid() {
		return "UNKNOWN"
	}
	return table[t].name
}

// Message is one printed line's worth of news about one pod.
type Message struct {
	Type Type
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

// EventType is the type of a message about ev: WARNING for a Warning
// Event, NORMAL for any other.
func EventType(ev *corev1.Event) Type {
	if ev.Type == corev1.EventTypeWarning {
		return Warning
	}
	return Normal
}
