// Package diagnosis holds what was found out about a failed pod: the
// object of a DIAGNOSIS message, which package diagnose makes, the run
// hands on and the printers write. It imports nothing of podsync.
package diagnosis

import (
	"k8s.io/apimachinery/pkg/types"
)

// Kind is the kind of a Diagnosis object in JSON, YAML and templates, so
// a template can tell it from a Pod or an Event ({.kind}).
const Kind = "Diagnosis"

// Diagnosis is what was found out about one pod in a failure state. Its
// JSON is the object of a DIAGNOSIS message (-o json):
//
//	{"kind":"Diagnosis","metadata":{"name":"web-1","namespace":"shop","uid":"…"},
//	 "reason":"CrashLoopBackOff",
//	 "containers":[{"name":"app","reason":"CrashLoopBackOff","restartCount":3,
//	   "logs":{"previous":true,"lines":["…","…"]}}],
//	 "events":[{"type":"Warning","reason":"BackOff","message":"…","count":4,
//	   "lastSeen":"2026-12-03T10:00:00Z","age":"2s"}],
//	 "missing":["…"]}
//
// Log lines and messages are exactly as the cluster gave them.
type Diagnosis struct {
	Kind     string `json:"kind"`
	Metadata Meta   `json:"metadata"`
	// Reason is the failure's first reason (see Failure.Reason).
	Reason     string      `json:"reason"`
	Containers []Container `json:"containers"`
	// Events are the pod's Events, folded, Warning first, newest first.
	Events []EventExplanation `json:"events"`
	// Missing says what could not be fetched, and why.
	Missing []string `json:"missing,omitempty"`

	// Failure is what the diagnosis was made for.
	Failure Failure `json:"-"`
	// EventsRead says Events were read, so a summary made after it needs
	// no second read.
	EventsRead bool `json:"-"`
}

// Meta names the pod.
type Meta struct {
	Name      string    `json:"name"`
	Namespace string    `json:"namespace"`
	UID       types.UID `json:"uid"`
}

// Container is one failed container and its log tail; Logs is nil for a
// container that never ran, or when logs are off (--log-lines 0).
type Container struct {
	Name         string   `json:"name"`
	Init         bool     `json:"init,omitempty"`
	Reason       string   `json:"reason"`
	RestartCount int32    `json:"restartCount"`
	Logs         *LogTail `json:"logs,omitempty"`
}

// Key is the pod's namespace/name.
func (d *Diagnosis) Key() string { return d.Metadata.Namespace + "/" + d.Metadata.Name }

// Log returns the log tail of the named container, if fetched.
func (d *Diagnosis) Log(container string) *LogTail {
	for i := range d.Containers {
		if d.Containers[i].Name == container {
			return d.Containers[i].Logs
		}
	}
	return nil
}

// Failure is the failure state a pod shows now.
type Failure struct {
	// Reason is the first reason found: a container's (CrashLoopBackOff,
	// Error, OOMKilled, ImagePullBackOff, ...), else Unschedulable or the
	// pod's phase Failed (or its own reason, such as Evicted).
	Reason     string
	Containers []FailedContainer
	// Parts identify the failure: one per failed container (its name,
	// restart count and reason), or the pod-level state when no container
	// failed. A pod diagnosed for every part already needs no new
	// diagnosis.
	Parts []string
}

// FailedContainer is one container in a failure state.
type FailedContainer struct {
	Name         string
	Init         bool
	Reason       string
	RestartCount int32
	// HasLog: an instance of the container ran, so there is a log to read;
	// Previous: that instance is the previous one (the container was
	// restarted and now waits or runs again).
	HasLog, Previous bool
}

// LogTail is the end of one container's log: its previous instance
// (`kubectl logs --previous`) after a restart, else its current one.
// Lines are exactly as the container wrote them; Error says why there
// are none (the log could not be read).
type LogTail struct {
	Previous bool     `json:"previous"`
	Lines    []string `json:"lines"`
	// Truncated: a byte limit shortened lines of the tail (each such
	// line ends with …); no line was dropped for it.
	Truncated bool   `json:"truncated,omitempty"`
	Error     string `json:"error,omitempty"`
}

// EventExplanation is one of the pod's recent events. LastSeen is
// RFC 3339; Age is kubectl's short form ("5m") at explanation time.
type EventExplanation struct {
	Type     string `json:"type"`
	Reason   string `json:"reason"`
	Message  string `json:"message"`
	Count    int32  `json:"count"`
	LastSeen string `json:"lastSeen,omitempty"`
	Age      string `json:"age,omitempty"`
}
