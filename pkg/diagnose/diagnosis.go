package diagnose

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
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
	Events []check.EventExplanation `json:"events"`
	// Missing says what could not be fetched, and why.
	Missing []string `json:"missing,omitempty"`

	// Failure is what the diagnosis was made for.
	Failure Failure `json:"-"`
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
	Name         string         `json:"name"`
	Init         bool           `json:"init,omitempty"`
	Reason       string         `json:"reason"`
	RestartCount int32          `json:"restartCount"`
	Logs         *check.LogTail `json:"logs,omitempty"`
}

// Key is the pod's namespace/name.
func (d *Diagnosis) Key() string { return d.Metadata.Namespace + "/" + d.Metadata.Name }

// Log returns the log tail of the named container, if fetched.
func (d *Diagnosis) Log(container string) *check.LogTail {
	for i := range d.Containers {
		if d.Containers[i].Name == container {
			return d.Containers[i].Logs
		}
	}
	return nil
}
