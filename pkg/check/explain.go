package check

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubectl-podsync/kubectl-podsync/internal/events"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/diagnosis"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/podview"
)

// maxEvents is how many of a pod's events an explanation keeps.
const maxEvents = 5

// PodExplanation says why one pod does not satisfy the check. The JSON
// field names are part of the summary's stable shape (see output.WriteSummaryJSON).
type PodExplanation struct {
	// Context is the pod's kubeconfig context in a check over several.
	Context   string `json:"context,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Phase     string `json:"phase"`
	Reason    string `json:"reason,omitempty"`
	Message   string `json:"message,omitempty"`
	Deleting  bool   `json:"deleting,omitempty"`
	// Unschedulable is the scheduler's message of a pod it cannot place
	// (PodScheduled=False, reason Unschedulable).
	Unschedulable   string                 `json:"unschedulable,omitempty"`
	UnmetConditions []UnmetCondition       `json:"unmetConditions"`
	Containers      []ContainerExplanation `json:"containers"`
	Events          []EventExplanation     `json:"events"`
	// Missing says what the explanation lacks and why (a diagnosis not
	// fetched in time, logs the user may not read).
	Missing []string `json:"missing,omitempty"`
}

// QualifiedName names the pod as the summary does: NAMESPACE/NAME, and
// its context in a check over several.
func (p *PodExplanation) QualifiedName() string {
	name := p.Name
	if p.Namespace != "" {
		name = p.Namespace + "/" + p.Name
	}
	if p.Context != "" {
		name += " in context " + p.Context
	}
	return name
}

// UnmetCondition is one --until condition the pod misses, with what was
// wanted, what the pod shows, and the reason and message of the pod
// condition involved, if any.
type UnmetCondition struct {
	Condition string `json:"condition"`
	Want      string `json:"want"`
	Got       string `json:"got"`
	Reason    string `json:"reason,omitempty"`
	Message   string `json:"message,omitempty"`
}

// ContainerExplanation is the state of one init or regular container.
// State is waiting, running, terminated, or unknown when the kubelet has
// not reported the container yet.
type ContainerExplanation struct {
	Name            string       `json:"name"`
	Init            bool         `json:"init,omitempty"`
	State           string       `json:"state"`
	Ready           bool         `json:"ready"`
	Reason          string       `json:"reason,omitempty"`
	Message         string       `json:"message,omitempty"`
	ExitCode        *int32       `json:"exitCode,omitempty"`
	RestartCount    int32        `json:"restartCount"`
	LastTermination *Termination `json:"lastTermination,omitempty"`
	// Logs is the tail of the failed container's log, when it was fetched.
	Logs *LogTail `json:"logs,omitempty"`
}

// LogTail is the end of one container's log (see diagnosis.LogTail).
type LogTail = diagnosis.LogTail

// EventExplanation is one of the pod's recent events (see
// diagnosis.EventExplanation).
type EventExplanation = diagnosis.EventExplanation

// Termination is how a container's previous run ended; for a container
// in CrashLoopBackOff it holds the exit code that explains the crash.
type Termination struct {
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty"`
	ExitCode int32  `json:"exitCode"`
}

// Explain explains pod against conds, with its events given by the
// caller in any order; ages are relative to now.
func Explain(pod *corev1.Pod, conds []Condition, events []corev1.Event) PodExplanation {
	return ExplainAt(time.Now(), pod, conds, events)
}

// ExplainAt is Explain with the time ages are measured from. Neither the
// pod nor the events are modified.
func ExplainAt(now time.Time, pod *corev1.Pod, conds []Condition, events []corev1.Event) PodExplanation {
	x := PodExplanation{
		Namespace:       pod.Namespace,
		Name:            pod.Name,
		Phase:           string(pod.Status.Phase),
		Reason:          pod.Status.Reason,
		Message:         pod.Status.Message,
		Deleting:        pod.DeletionTimestamp != nil,
		UnmetConditions: []UnmetCondition{},
		Containers:      explainContainers(pod),
		Events:          explainEvents(now, events),
	}
	if x.Phase == "" {
		x.Phase = "Unknown"
	}
	if pc := podview.Unschedulable(pod); pc != nil {
		x.Unschedulable = pc.Message
	}
	for _, c := range conds {
		if !c.SatisfiedBy(pod) {
			x.UnmetConditions = append(x.UnmetConditions, explainCondition(pod, c))
		}
	}
	return x
}

func explainCondition(pod *corev1.Pod, c Condition) UnmetCondition {
	u := UnmetCondition{Condition: c.String()}
	phase := "phase " + string(pod.Status.Phase)
	switch c.Keyword {
	case KeywordRunning:
		u.Want, u.Got = "phase Running", phase
	case KeywordSucceeded:
		u.Want, u.Got = "phase Succeeded", phase
	case KeywordCompleted:
		u.Want, u.Got = "phase Succeeded or Failed", phase
	case KeywordGone:
		u.Want, u.Got = "no pod", "pod exists"
		if pod.DeletionTimestamp != nil {
			u.Got = "pod is being deleted"
		}
	case KeywordReady:
		u = podConditionGap(pod, u, corev1.PodReady, corev1.ConditionTrue)
	case KeywordHealthy:
		u = podConditionGap(pod, u, corev1.PodReady, corev1.ConditionTrue)
		u.Want += " or phase Succeeded"
		u.Got += ", " + phase
	case KeywordPodCondition:
		u = podConditionGap(pod, u, c.Type, c.Status)
	}
	return u
}

func podConditionGap(pod *corev1.Pod, u UnmetCondition, t corev1.PodConditionType, want corev1.ConditionStatus) UnmetCondition {
	u.Want = string(t) + "=" + string(want)
	pc := podview.Condition(pod, t)
	if pc == nil {
		u.Got = string(t) + " not reported"
		return u
	}
	u.Got = string(t) + "=" + string(pc.Status)
	if podview.Stale(pod, pc) {
		u.Got += fmt.Sprintf(" of generation %d, not the current %d", observedOf(pod, pc), pod.Generation)
	}
	u.Reason, u.Message = pc.Reason, pc.Message
	return u
}

// observedOf is the generation a pod's condition speaks of: its own
// observedGeneration, else the status's.
func observedOf(pod *corev1.Pod, pc *corev1.PodCondition) int64 {
	if pc.ObservedGeneration != 0 {
		return pc.ObservedGeneration
	}
	return pod.Status.ObservedGeneration
}

// explainContainers lists init then regular containers in spec order,
// so containers the kubelet has not reported yet show up too.
func explainContainers(pod *corev1.Pod) []ContainerExplanation {
	out := make([]ContainerExplanation, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	out = appendContainers(out, pod.Spec.InitContainers, pod.Status.InitContainerStatuses, true)
	return appendContainers(out, pod.Spec.Containers, pod.Status.ContainerStatuses, false)
}

func appendContainers(out []ContainerExplanation, specs []corev1.Container, statuses []corev1.ContainerStatus, init bool) []ContainerExplanation {
	byName := make(map[string]*corev1.ContainerStatus, len(statuses))
	for i := range statuses {
		byName[statuses[i].Name] = &statuses[i]
	}
	for _, c := range specs {
		out = append(out, explainContainer(c.Name, byName[c.Name], init))
		delete(byName, c.Name)
	}
	// Statuses without a spec entry only happen with partial objects;
	// keep them rather than hide what the kubelet reported.
	for i := range statuses {
		if byName[statuses[i].Name] != nil {
			out = append(out, explainContainer(statuses[i].Name, &statuses[i], init))
		}
	}
	return out
}

func explainContainer(name string, cs *corev1.ContainerStatus, init bool) ContainerExplanation {
	x := ContainerExplanation{Name: name, Init: init, State: "unknown"}
	if cs == nil {
		return x
	}
	x.Ready, x.RestartCount = cs.Ready, cs.RestartCount
	switch s := cs.State; {
	case s.Waiting != nil:
		x.State, x.Reason, x.Message = "waiting", s.Waiting.Reason, s.Waiting.Message
	case s.Running != nil:
		x.State = "running"
	case s.Terminated != nil:
		code := s.Terminated.ExitCode
		x.State, x.Reason, x.Message, x.ExitCode = "terminated", s.Terminated.Reason, s.Terminated.Message, &code
	}
	if t := cs.LastTerminationState.Terminated; t != nil {
		x.LastTermination = &Termination{Reason: t.Reason, Message: t.Message, ExitCode: t.ExitCode}
	}
	return x
}

// explainEvents folds the events (ExplainEvents) and keeps maxEvents.
func explainEvents(now time.Time, events []corev1.Event) []EventExplanation {
	out := ExplainEvents(now, events)
	if len(out) > maxEvents {
		out = out[:maxEvents]
	}
	return out
}

// ExplainEvents folds events that say the same thing (type, reason and
// message) into one, adding up their counts and keeping the newest time,
// and orders them Warning first, then newest first. The caller's slice is
// left alone.
func ExplainEvents(now time.Time, events []corev1.Event) []EventExplanation {
	type folded struct {
		x    EventExplanation
		last time.Time
	}
	byText := map[[3]string]*folded{}
	var all []*folded
	for i := range events {
		ev := &events[i]
		k := [3]string{ev.Type, ev.Reason, ev.Message}
		f := byText[k]
		if f == nil {
			f = &folded{x: EventExplanation{Type: ev.Type, Reason: ev.Reason, Message: ev.Message}}
			byText[k] = f
			all = append(all, f)
		}
		f.x.Count += eventCount(ev)
		if t := eventTime(ev); t.After(f.last) {
			f.last = t
		}
	}
	slices.SortStableFunc(all, func(a, b *folded) int {
		if wa, wb := a.x.Type == corev1.EventTypeWarning, b.x.Type == corev1.EventTypeWarning; wa != wb {
			if wa {
				return -1
			}
			return 1
		}
		return b.last.Compare(a.last)
	})
	out := make([]EventExplanation, 0, len(all))
	for _, f := range all {
		x := f.x
		if !f.last.IsZero() {
			x.LastSeen = f.last.UTC().Format(time.RFC3339)
			x.Age = duration.HumanDuration(now.Sub(f.last))
		}
		out = append(out, x)
	}
	return out
}

// eventTime is events.Time, and eventCount events.Count: the parameter
// named events hides the package where they are used.
func eventTime(ev *corev1.Event) time.Time { return events.Time(ev) }

func eventCount(ev *corev1.Event) int32 { return events.Count(ev) }
