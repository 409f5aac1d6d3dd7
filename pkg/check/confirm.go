package check

import (
	"fmt"
	"sort"
	"strings"
)

// Pods alone cannot tell a rollout that has not started yet: right after
// `kubectl set image`, before the Deployment controller has created the
// new ReplicaSet's first pod, every matching pod is an old one and may be
// ready. With ConfirmRollouts, a Deployment whose counted pods all belong to
// one ReplicaSet holds the check back until the caller has confirmed, from
// the API, that this ReplicaSet is the one for the Deployment's current
// pod template (SetCurrent).

// CurrentRevision is what the API says about one Deployment.
type CurrentRevision struct {
	// ReplicaSet and Hash name the ReplicaSet for the Deployment's current
	// pod template and its pod-template-hash; empty when there is none yet.
	ReplicaSet string
	Hash       string
	// Waiting says why the rollout cannot be confirmed yet even if the
	// pods match (the controller has not seen the newest spec, there is no
	// ReplicaSet for the template yet); "" when Hash says it all.
	Waiting string
	// Unverifiable: the API cannot tell (the Deployment is gone, or the
	// user may not read it), so its pods are judged alone.
	Unverifiable bool
}

// ConfirmRollouts turns the confirmation on; call it before any Observe.
// It only applies to --until conditions other than gone.
func (e *Evaluator) ConfirmRollouts() {
	e.confirm = e.until != "" && !e.gone
}

// ConfirmsRollouts reports whether the confirmation is on.
func (e *Evaluator) ConfirmsRollouts() bool { return e.confirm }

// SetCurrent records what the API says about the Deployment key
// (namespace/name) and judges its pods against it.
func (e *Evaluator) SetCurrent(deployment string, c CurrentRevision) {
	e.current[deployment] = c
	if w := e.workloads[deployment]; w != nil {
		e.reconfirm(w)
	}
}

// HasCurrent reports whether SetCurrent was called for the Deployment.
func (e *Evaluator) HasCurrent(deployment string) bool {
	_, ok := e.current[deployment]
	return ok
}

// Unconfirmed returns the sorted keys of the Deployments that hold the
// check back. It costs O(workloads): call it when the rest is met.
func (e *Evaluator) Unconfirmed() []string {
	var keys []string
	for k, w := range e.workloads {
		if w.unconfirmed {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// IsUnconfirmed reports whether the Deployment holds the check back, in
// O(1).
func (e *Evaluator) IsUnconfirmed(deployment string) bool {
	w := e.workloads[deployment]
	return w != nil && w.unconfirmed
}

// TakeUnconfirmed returns the sorted keys of the Deployments that came to
// hold the check back since its last call and still do. It costs
// O(those): a caller that asks the API about each once need not scan
// every Deployment on every change, which with thousands of them and a
// lookup answered at a time would cost O(Deployments²).
func (e *Evaluator) TakeUnconfirmed() []string {
	var keys []string
	for k := range e.turned {
		if e.IsUnconfirmed(k) {
			keys = append(keys, k)
		}
	}
	clear(e.turned)
	sort.Strings(keys)
	return keys
}

// reconfirm updates whether w holds the check back.
func (e *Evaluator) reconfirm(w *workload) {
	now := e.confirm && len(w.revs) == 1 && !e.confirms(w.key, w.only())
	if now == w.unconfirmed {
		return
	}
	w.unconfirmed = now
	if now {
		e.unconfirmed++
		e.turned[w.key] = true
	} else {
		e.unconfirmed--
	}
}

func (e *Evaluator) confirms(deployment string, r *revision) bool {
	c, ok := e.current[deployment]
	return ok && (c.Unverifiable || c.Waiting == "" && c.Hash == r.hash)
}

// only returns the one revision of a workload that has exactly one.
func (w *workload) only() *revision {
	for _, r := range w.revs {
		return r
	}
	return nil
}

// unconfirmedGap explains why a pod of an unconfirmed Deployment holds the
// check back; ok is false while the Deployment has not been looked up, as
// there is nothing to tell yet.
func (e *Evaluator) unconfirmedGap(w *workload, r *revision) (UnmetCondition, bool) {
	c, ok := e.current[w.key]
	if !ok {
		return UnmetCondition{}, false
	}
	name := nameOf(w.key)
	u := UnmetCondition{Condition: "rollout"}
	if c.Waiting != "" {
		u.Want = "pods of the current ReplicaSet of Deployment " + name
		u.Got = fmt.Sprintf("pod of ReplicaSet %s; %s", r.rs, c.Waiting)
		return u, true
	}
	u.Want = fmt.Sprintf("only pods of ReplicaSet %s, the current one of Deployment %s", c.ReplicaSet, name)
	u.Got = fmt.Sprintf("pod of ReplicaSet %s, which is being replaced", r.rs)
	return u, true
}

// unconfirmedText says for each unconfirmed Deployment why, sorted.
func (e *Evaluator) unconfirmedText() string {
	keys := e.Unconfirmed()
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		w := e.workloads[k]
		c, ok := e.current[k]
		r := w.only()
		switch {
		case !ok:
			parts = append(parts, k+": not checked yet")
		case c.Waiting != "":
			parts = append(parts, k+": "+c.Waiting)
		default:
			parts = append(parts, fmt.Sprintf("%s: the current ReplicaSet is %s, but the matching pods are of %s", k, c.ReplicaSet, r.rs))
		}
	}
	return strings.Join(parts, "; ")
}
