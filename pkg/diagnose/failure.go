// Package diagnose finds out why a pod failed: for a pod in a failure
// state it reads the failed containers' last log lines (the previous
// instance after a restart, as `kubectl logs --previous`) and the pod's
// Events, with one bounded attempt at a time. A failed attempt that may
// pass is the caller's to retry (the controller's rate-limited queue); a
// refusal (RBAC) is said once and not asked again.
package diagnose

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/diagnosis"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/podview"
)

// waitingFailures are the waiting reasons of a container that cannot run:
// the kubelet keeps trying, but nothing will change without a fix.
var waitingFailures = map[string]bool{
	"CrashLoopBackOff": true, "ImagePullBackOff": true, "ErrImagePull": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

// Of returns the failure state pod shows, if any: a container waiting in
// one of waitingFailures, a container terminated with a non-zero exit
// code or OOMKilled, phase Failed, or PodScheduled=False for Unschedulable.
// The pod is only read.
func Of(pod *corev1.Pod) (diagnosis.Failure, bool) {
	var f diagnosis.Failure
	statuses := [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses}
	for i, list := range statuses {
		for j := range list {
			if c, part, ok := failedContainer(&list[j], i == 0); ok {
				f.Containers = append(f.Containers, c)
				f.Parts = append(f.Parts, part)
			}
		}
	}
	if len(f.Containers) > 0 {
		f.Reason = f.Containers[0].Reason
		return f, true
	}
	switch {
	case pod.Status.Phase == corev1.PodFailed:
		f.Reason = "Failed"
		if pod.Status.Reason != "" {
			f.Reason = pod.Status.Reason
		}
	case podview.Unschedulable(pod) != nil:
		f.Reason = corev1.PodReasonUnschedulable
	default:
		return diagnosis.Failure{}, false
	}
	f.Parts = []string{"pod:" + f.Reason}
	return f, true
}

// failedContainer tells whether the container is in a failure state, and
// names that failure: the container, its restart count and its reason.
// A crash is thus diagnosed when the container has just ended (Error,
// its current instance) and again in CrashLoopBackOff (its previous
// instance, which is what `kubectl logs --previous` shows), then no more
// until the next crash.
func failedContainer(cs *corev1.ContainerStatus, init bool) (diagnosis.FailedContainer, string, bool) {
	c := diagnosis.FailedContainer{Name: cs.Name, Init: init, RestartCount: cs.RestartCount}
	switch s := cs.State; {
	case s.Waiting != nil && waitingFailures[s.Waiting.Reason]:
		c.Reason = s.Waiting.Reason
		// A container that never ran has no log, only events.
		c.HasLog = cs.RestartCount > 0 && cs.LastTerminationState.Terminated != nil
		c.Previous = c.HasLog
	case s.Terminated != nil && (s.Terminated.ExitCode != 0 || s.Terminated.Reason == "OOMKilled"):
		c.Reason, c.HasLog = s.Terminated.Reason, true
		if c.Reason == "" {
			c.Reason = fmt.Sprintf("ExitCode:%d", s.Terminated.ExitCode)
		}
	default:
		return c, "", false
	}
	return c, fmt.Sprintf("%s#%d:%s", cs.Name, cs.RestartCount, c.Reason), true
}

// Seen remembers, per pod, the failure parts already diagnosed, so a pod
// is diagnosed once per failure. It is not safe for concurrent use.
type Seen struct {
	pods map[string]*seenPod
}

type seenPod struct {
	uid   types.UID
	parts []string
}

// Covers reports whether every part of f was diagnosed for this pod (this
// UID: a pod created again under the same name starts afresh).
func (s *Seen) Covers(key string, uid types.UID, f diagnosis.Failure) bool {
	p := s.pods[key]
	if p == nil || p.uid != uid {
		return false
	}
	for _, part := range f.Parts {
		if !slices.Contains(p.parts, part) {
			return false
		}
	}
	return true
}

// Add records that f was diagnosed.
func (s *Seen) Add(key string, uid types.UID, f diagnosis.Failure) {
	if s.pods == nil {
		s.pods = map[string]*seenPod{}
	}
	p := s.pods[key]
	if p == nil || p.uid != uid {
		p = &seenPod{uid: uid}
		s.pods[key] = p
	}
	for _, part := range f.Parts {
		if !slices.Contains(p.parts, part) {
			p.parts = append(p.parts, part)
		}
	}
	// A pod that crashes for hours adds a part per crash: only the
	// recent ones can come back.
	if len(p.parts) > maxParts {
		p.parts = slices.Delete(p.parts, 0, len(p.parts)-maxParts)
	}
}

// maxParts bounds the failure parts remembered per pod.
const maxParts = 16

// Forget drops what is known of a pod that is gone.
func (s *Seen) Forget(key string) { delete(s.pods, key) }
