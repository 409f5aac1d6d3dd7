package verdicts

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// tolerance is how far apart two judges started at the same moment may
// end and still count as deciding together: the processes start, list and
// watch on a busy two-core machine, and kstatus is computed on the watch
// events of a third client.
const tolerance = 1500 * time.Millisecond

// firstVerdict is how long podsync may take from its start to its first
// verdict on a loaded two-core machine: it resolves the target, lists the
// pods and the workload's revisions first (kubectl rollout status reads
// one object). A state kubectl calls done that lasts less than this is a
// race either process may lose.
const firstVerdict = 3 * time.Second

// The invariants, for each check (podsync, kubectl and kstatus started
// together on the target, each with --timeout T):
//
//   - met: podsync exits 0 only if kubectl did not fail and would have
//     succeeded no more than tolerance after podsync's end: the kubectl
//     process succeeded by then (rollout status exit 0; for a Job, kubectl
//     wait --for=condition=Complete), or kubectl's own rule (kubectlRule)
//     held on a state of the object that the check's watch delivered by
//     then, which the kubectl process, started, listing and watching a
//     little later on a busy machine, can miss when it lasts only a
//     moment; and kstatus computed Current on a state seen no more than
//     tolerance after podsync's end. A success is never reported before
//     both judges would report it.
//   - failed: podsync exits 4 only if kubectl failed (the Deployment's
//     progress deadline; the Job's Failed condition), or kubectl's rule
//     or kstatus said failed on a state in effect between the check's
//     start and podsync's end (+ tolerance), or a --fail-on reason could
//     show on a pod podsync must judge while it ran: a template whose pods
//     crash-loop, fail to pull or fail, current at some moment between the
//     check's start and podsync's end (the span ends tolerance after the
//     template was replaced), or a Job's pod ended by a kubelet (no
//     controller replaces it).
//   - timed out: podsync exits 3 only if kubectl did not decide (success or
//     failure) more than tolerance before the shared --timeout, or, for a
//     success, kubectl's rule never held for firstVerdict on end.
//   - podsync exits with 0, 3 or 4 and nothing else.
//
// Exceptions, where kubectl or kstatus is wrong and podsync right:
//
//   - a scale-down's pods still terminating: kstatus says InProgress
//     ("Pending termination: N") while status.replicas exceeds
//     spec.replicas; kubectl rollout status and podsync (which names the
//     pods being deleted and does not count them) call the rollout done.
//     kstatus's state counts as Current there when kubectl succeeded.
//   - a paused Deployment: the controller sets Progressing's reason to
//     DeploymentPaused, and kstatus, which wants NewReplicaSetAvailable,
//     says InProgress ("ReplicaSet not Available") for as long as it is
//     paused, even with every replica updated and available; kubectl
//     rollout status and podsync call such a Deployment rolled out. That
//     state counts as Current when kubectl succeeded.
//   - kubectl succeeding on a status that counts pods no longer there:
//     the ReplicaSet and StatefulSet controllers' counts lag the pods (a
//     StatefulSet counts a Running, Ready pod in readyReplicas while it
//     terminates; a ReplicaSet's status can still hold a pod just deleted
//     as available), so kubectl rollout status can succeed while fewer
//     pods than spec.replicas are ready and not being deleted; podsync,
//     which judges the pods, waits for the replacements, and a change
//     that follows (a new template on a paused Deployment, another pod
//     deleted) can keep it waiting to its --timeout. A podsync timeout is
//     not held against it when, as the check's own watch of the pods saw
//     it at kubectl's success, fewer pods were ready (and not being
//     deleted) than the object's spec.replicas.
func (p *play) judge() []string {
	var out []string
	for i, c := range p.checks {
		for _, v := range p.judgeCheck(c) {
			out = append(out, fmt.Sprintf("check %d (at %.1fs, --timeout %s): %s", i+1, c.at.Sub(p.start).Seconds(), c.timeout, v))
		}
	}
	return out
}

func (p *play) judgeCheck(c *check) []string {
	if isCR(p.sc.kind) {
		return p.judgeCRCheck(c)
	}
	pr := c.podsync
	at := func(t time.Time) string { return p.since(t) }
	var out []string
	switch pr.Code {
	case 0:
		by := pr.end.Add(tolerance)
		byProcess := c.kubectlSays == "met" && !c.kubectl.end.After(by)
		byRule := !c.ruleMet.IsZero() && !c.ruleMet.After(by)
		switch {
		case c.kubectlSays == "failed" || c.kubectlSays == "error":
			out = append(out, fmt.Sprintf("podsync met at %s; kubectl %s at %s", at(pr.end), c.kubectlSays, at(c.kubectl.end)))
		case !byProcess && !byRule:
			out = append(out, fmt.Sprintf("podsync met at %s; kubectl %s at %s, its rule first held at %s", at(pr.end),
				c.kubectlSays, at(c.kubectl.end), at(c.ruleMet)))
		}
		if !kstatusCurrentBy(c, pr.end.Add(tolerance)) {
			out = append(out, fmt.Sprintf("podsync met at %s; kstatus Current at %s (last: %s)", at(pr.end), at(c.kstatusCurrent), c.kstatusLast))
		}
	case 4:
		byKstatus := !c.kstatusFailed.IsZero() && !c.kstatusFailed.After(pr.end.Add(tolerance))
		byRule := !c.ruleFailed.IsZero() && !c.ruleFailed.After(pr.end.Add(tolerance))
		if c.kubectlSays != "failed" && !byKstatus && !byRule && !p.causeDuring(c.at, pr.end) {
			out = append(out, fmt.Sprintf("podsync failed (exit 4) at %s with no cause; kubectl %s at %s, kstatus %s", at(pr.end),
				c.kubectlSays, at(c.kubectl.end), c.kstatusLast))
		}
	case 3:
		decided := c.kubectlSays == "met" || c.kubectlSays == "failed"
		excused := false
		if st, ok := c.stateAt(c.kubectl.end); ok && c.kubectlSays == "met" && st.want >= 0 && st.ready < st.want {
			excused = true
			p.logf("check at %.1fs: kubectl succeeded with %d of %d pods ready (exception: kubectl premature)", c.at.Sub(p.start).Seconds(), st.ready, st.want)
		}
		if c.kubectlSays == "met" && !c.ruleHeldFor(firstVerdict, pr.end) {
			p.logf("check at %.1fs: kubectl's rule never held for %s (a race)", c.at.Sub(p.start).Seconds(), firstVerdict)
			excused = true
		}
		if decided && !excused && c.kubectl.end.Sub(c.at) < c.timeout-tolerance {
			out = append(out, fmt.Sprintf("podsync timed out; kubectl %s at %s", c.kubectlSays, at(c.kubectl.end)))
		}
	default:
		out = append(out, fmt.Sprintf("podsync exit %d", pr.Code))
	}
	if c.kubectlSays == "error" {
		out = append(out, fmt.Sprintf("kubectl could not judge: exit %d: %s", c.kubectl.Code, strings.TrimSpace(c.kubectl.Stderr)))
	}
	return out
}

// judgeCRCheck holds podsync to an operator's own meaning (crRule) on
// the states of a custom resource the check's watch saw:
//
//   - met: podsync exits 0 only if the rule said met on a state in
//     effect within tolerance of podsync's end: a Ready=True of an older
//     generation, a status.observedGeneration behind metadata.generation,
//     a v1beta2 Cluster without Available=True are not ready.
//   - failed: podsync exits 4 only if the rule said failed (the dialect's
//     failure: Issuing=False/Failed, Stalled=True, NotReady=True with a
//     reason other than Creating, phase Failed) on a state in effect
//     between the check's start and podsync's end (+ tolerance).
//   - timed out: podsync exits 3 only if `kubectl wait` on the kind's
//     readiness condition did not succeed more than tolerance before the
//     shared --timeout, or the rule never held for firstVerdict (kubectl
//     wait also succeeds on a condition podsync rightly ignores: one of
//     an older generation, one beside a failure or a progress).
//   - podsync exits with 0, 3 or 4 and nothing else.
//
// kstatus is computed on every state and logged, not judged: it knows
// none of the dialects beyond Ready, Reconciling and Stalled.
func (p *play) judgeCRCheck(c *check) []string {
	pr := c.podsync
	at := func(t time.Time) string { return p.since(t) }
	var out []string
	switch pr.Code {
	case 0:
		if !c.ruleHeldDuring(pr.end.Add(-tolerance), pr.end.Add(tolerance)) {
			out = append(out, fmt.Sprintf("podsync met at %s; the operator's rule did not say ready then (first held at %s); kubectl %s at %s",
				at(pr.end), at(c.ruleMet), c.kubectlSays, at(c.kubectl.end)))
		}
	case 4:
		if c.ruleFailed.IsZero() || c.ruleFailed.After(pr.end.Add(tolerance)) {
			out = append(out, fmt.Sprintf("podsync failed (exit 4) at %s with no failure in the status; kubectl %s at %s, kstatus %s",
				at(pr.end), c.kubectlSays, at(c.kubectl.end), c.kstatusLast))
		}
	case 3:
		if c.kubectlSays == "met" && c.kubectl.end.Sub(c.at) < c.timeout-tolerance && c.ruleHeldFor(firstVerdict, pr.end) {
			out = append(out, fmt.Sprintf("podsync timed out; kubectl met at %s and the operator's rule held for %s", at(c.kubectl.end), firstVerdict))
		}
	default:
		out = append(out, fmt.Sprintf("podsync exit %d", pr.Code))
	}
	if c.kubectlSays == "error" {
		out = append(out, fmt.Sprintf("kubectl could not judge: exit %d: %s", c.kubectl.Code, strings.TrimSpace(c.kubectl.Stderr)))
	}
	return out
}

// ruleHeldDuring: kubectl's rule (crRule for a custom resource) held at
// some moment of [from, to].
func (c *check) ruleHeldDuring(from, to time.Time) bool {
	for _, s := range c.ruleSpans {
		if !s.from.After(to) && (s.to.IsZero() || !s.to.Before(from)) {
			return true
		}
	}
	return false
}

// kstatusCurrentBy: kstatus computed Current by then, or InProgress for
// one of the exceptions above (a scale-down's pods terminating, a paused
// Deployment) while kubectl succeeded.
func kstatusCurrentBy(c *check, by time.Time) bool {
	if !c.kstatusCurrent.IsZero() && !c.kstatusCurrent.After(by) {
		return true
	}
	return c.kubectlSays == "met" && !c.kstatusExcused.IsZero() && !c.kstatusExcused.After(by)
}

// kstatusExcused: kstatus says InProgress for one of the exceptions.
func kstatusExcused(u *unstructured.Unstructured, r *kstatus.Result) bool {
	if r.Status != kstatus.InProgressStatus {
		return false
	}
	if strings.HasPrefix(r.Message, "Pending termination: ") {
		return true
	}
	paused, _, _ := unstructured.NestedBool(u.Object, "spec", "paused")
	return paused && r.Message == "ReplicaSet not Available"
}

// ruleHeldFor: kubectl's rule held for d on end at some moment before
// until (an open span lasts until then).
func (c *check) ruleHeldFor(d time.Duration, until time.Time) bool {
	for _, s := range c.ruleSpans {
		end := s.to
		if end.IsZero() {
			end = until
		}
		if end.Sub(s.from) >= d {
			return true
		}
	}
	return false
}

// causeDuring: a --fail-on cause was present at some moment of [from, to].
func (p *play) causeDuring(from, to time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.causes {
		if s.from.After(to) {
			continue
		}
		if s.to.IsZero() || !s.to.Add(tolerance).Before(from) {
			return true
		}
	}
	return false
}
