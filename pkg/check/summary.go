package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
)

// maxTextLen bounds one message in the text summary; termination
// messages can be kilobytes long. JSON keeps them whole.
const maxTextLen = text.MaxLineLen

// Summary is what a check prints on stderr when it ends. The caller
// fills it: Pods and Statuses from the Evaluator, Events from its own
// counters, and Unsatisfied only when the check failed (exit 3 or 4).
type Summary struct {
	Verdict  string
	ExitCode int
	Duration time.Duration
	Pods     int
	Statuses map[string]int // pods per STATUS column
	Events   map[string]int // messages per message type
	// EventTypes are the types always shown, in this order, even at zero.
	EventTypes []string
	Reason     string // one line: why the check ended this way
	// Targets has one entry per workload target (TYPE/NAME, -f).
	Targets []TargetSummary
	// LeftBehind lists the pods in phase Failed that their controller
	// replaces: matched, but not judged (see LeftBehindOf).
	LeftBehind  []LeftBehindPod
	Unsatisfied []PodExplanation
	// Omitted counts unsatisfied pods left out of Unsatisfied, so a
	// caller can cap the explanations for huge selections.
	Omitted int
	// Contexts has a line per context of a check over several; the
	// fields above are then their total.
	Contexts []ContextSummary
}

// summaryJSON is the wire shape of WriteJSON.
type summaryJSON struct {
	Verdict         string           `json:"verdict"`
	ExitCode        int              `json:"exitCode"`
	DurationSeconds float64          `json:"durationSeconds"`
	Pods            int              `json:"pods"`
	Statuses        map[string]int   `json:"statuses"`
	Events          map[string]int   `json:"events"`
	Reason          string           `json:"reason,omitempty"`
	Targets         []TargetSummary  `json:"targets,omitempty"`
	LeftBehind      []LeftBehindPod  `json:"leftBehind,omitempty"`
	Unsatisfied     []PodExplanation `json:"unsatisfied"`
	Omitted         int              `json:"omitted,omitempty"`
	Contexts        []ContextSummary `json:"contexts,omitempty"`
}

// WriteJSON writes the summary as exactly one compact JSON object on one
// line. The shape is stable:
//
//	{"verdict":"failed","exitCode":4,"durationSeconds":2.1,"pods":3,
//	 "statuses":{"CrashLoopBackOff":1,"Running":2},
//	 "events":{"ADD":0,"GONE":0,"SYNC":3,"UPDATE":5},
//	 "reason":"pod default/web-1: container \"app\" is CrashLoopBackOff: ...",
//	 "unsatisfied":[{"namespace":"default","name":"web-1","phase":"Running",
//	   "unmetConditions":[{"condition":"ready","want":"Ready=True","got":"Ready=False","reason":"...","message":"..."}],
//	   "containers":[{"name":"app","state":"waiting","ready":false,"reason":"CrashLoopBackOff",
//	     "message":"...","restartCount":4,"lastTermination":{"reason":"Error","exitCode":1},
//	     "logs":{"previous":true,"lines":["...","..."]}}],
//	   "events":[{"type":"Warning","reason":"BackOff","message":"...","count":12,
//	     "lastSeen":"2025-01-02T03:04:05Z","age":"30s"}],
//	   "missing":["..."]}],
//	 "omitted":0}
//
// verdict is one of met, not met, failed, done, interrupted;
// durationSeconds has millisecond precision; statuses and events are
// always objects (events always holds EventTypes: the four pod types, and
// those a flag turned on), unsatisfied is always an array; reason,
// omitted and empty optional fields of the explanations are left out.
// Log lines and messages are exactly as the cluster gave them. A check
// about workloads (TYPE/NAME, -f) also has targets, one object per target
// (see TargetSummary):
//
//	"targets":[{"kind":"Deployment","namespace":"shop","name":"web",
//	  "verdict":"met","reason":"rolled out 3/3","pods":3,"metAfterSeconds":14.2}]
//
// Pods in phase Failed that their controller replaces (evicted, shut
// down with their node) are matched but not judged; leftBehind lists each
// (see LeftBehindPod), and is left out when there is none:
//
//	"leftBehind":[{"namespace":"shop","name":"web-7d4f-x2","reason":"Evicted",
//	  "message":"The node was low on resource: memory. ...","ownerKind":"ReplicaSet","ownerName":"web-7d4f"}]
func (s Summary) WriteJSON(w io.Writer) error {
	out := summaryJSON{
		Verdict:         s.Verdict,
		ExitCode:        s.ExitCode,
		DurationSeconds: math.Round(s.Duration.Seconds()*1000) / 1000,
		Pods:            s.Pods,
		Statuses:        withKeys(s.Statuses, nil),
		Events:          withKeys(s.Events, s.EventTypes),
		Reason:          s.Reason,
		Targets:         s.Targets,
		LeftBehind:      s.LeftBehind,
		Unsatisfied:     s.Unsatisfied,
		Omitted:         s.Omitted,
		Contexts:        s.Contexts,
	}
	if out.Unsatisfied == nil {
		out.Unsatisfied = []PodExplanation{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Messages hold <, > and & often; escaping them only hurts reading.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("encoding summary as JSON: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("writing summary: %w", err)
	}
	return nil
}

// WriteText writes the summary for people, in kubectl describe style.
// It is built in memory and written at once so it is not interleaved
// with other stderr lines.
func (s Summary) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Verdict:  %s (exit %d) after %s\n", s.Verdict, s.ExitCode, RoundDuration(s.Duration))
	if s.Reason != "" {
		fmt.Fprintf(&b, "Reason:   %s\n", text.SafeLine(s.Reason, maxTextLen))
	}
	writeContexts(&b, s.Contexts)
	writeTargets(&b, s.Targets)
	fmt.Fprintf(&b, "Pods:     %d matched%s\n", s.Pods, statusList(s.Statuses))
	if l := leftBehindText(s.LeftBehind); l != "" {
		fmt.Fprintf(&b, "Replaced: %s\n", text.SafeLine(l, 0))
	}
	fmt.Fprintf(&b, "Events:   %s\n", eventList(s.Events, s.EventTypes))
	for i := range s.Unsatisfied {
		writePod(&b, &s.Unsatisfied[i])
	}
	if s.Omitted > 0 {
		fmt.Fprintf(&b, "... and %d more unsatisfied pods not shown\n", s.Omitted)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing summary: %w", err)
	}
	return nil
}

// SchedulingReason puts first, in a not-met check's one-line reason, a
// pod the scheduler cannot place: the scheduler's message says what to
// fix, where "do not satisfy ready" only says what is missing.
func (s *Summary) SchedulingReason() {
	for _, p := range s.Unsatisfied {
		if p.Unschedulable == "" {
			continue
		}
		lead := fmt.Sprintf("pod %s cannot be scheduled: %s", podName(&p), text.OneLine(p.Unschedulable, maxTextLen))
		if s.Reason != "" {
			lead += "; " + s.Reason
		}
		s.Reason = lead
		return
	}
}

func writePod(b *strings.Builder, p *PodExplanation) {
	fmt.Fprintf(b, "Pod %s is not satisfied:\n", podName(p))
	phase := p.Phase
	if p.Deleting {
		phase += " (being deleted)"
	}
	fmt.Fprintf(b, "  Phase:  %s%s\n", phase, reasonText(p.Reason, p.Message))
	if p.Unschedulable != "" {
		fmt.Fprintf(b, "  Scheduling: PodScheduled=False%s\n", reasonText("Unschedulable", p.Unschedulable))
	}
	for _, u := range p.UnmetConditions {
		fmt.Fprintf(b, "  Unmet:  %s: want %s, got %s%s\n", u.Condition, u.Want, u.Got, reasonText(u.Reason, u.Message))
	}
	for i := range p.Containers {
		writeContainer(b, &p.Containers[i])
		writeLogTail(b, &p.Containers[i])
	}
	writeEvents(b, p.Events)
	for _, m := range p.Missing {
		fmt.Fprintf(b, "  Missing: %s\n", text.SafeLine(m, maxTextLen))
	}
}

func writeContainer(b *strings.Builder, c *ContainerExplanation) {
	label := "Container"
	if c.Init {
		label = "Init container"
	}
	fmt.Fprintf(b, "  %s %s: %s%s", label, c.Name, c.State, reasonText(c.Reason, c.Message))
	if c.ExitCode != nil {
		fmt.Fprintf(b, ", exit code %d", *c.ExitCode)
	}
	fmt.Fprintf(b, ", ready %t, restarts %d", c.Ready, c.RestartCount)
	if t := c.LastTermination; t != nil {
		fmt.Fprintf(b, "; last terminated%s, exit code %d", reasonText(t.Reason, t.Message), t.ExitCode)
	}
	b.WriteString("\n")
}

// reasonText renders " (Reason: message)" or nothing.
func reasonText(reason, message string) string {
	reason, message = text.SafeLine(reason, maxTextLen), text.SafeLine(message, maxTextLen)
	switch {
	case reason != "" && message != "":
		return " (" + reason + ": " + message + ")"
	case reason != "":
		return " (" + reason + ")"
	case message != "":
		return " (" + message + ")"
	}
	return ""
}

// statusList renders " (CrashLoopBackOff 1, Running 2)", sorted by name.
func statusList(counts map[string]int) string {
	if len(counts) == 0 {
		return ""
	}
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s %d", text.Escape(k), counts[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// eventList renders the types in their order, then any others.
func eventList(counts map[string]int, types []string) string {
	all := withKeys(counts, types)
	parts := make([]string, 0, len(all))
	for _, k := range types {
		parts = append(parts, fmt.Sprintf("%s %d", k, all[k]))
		delete(all, k)
	}
	extra := make([]string, 0, len(all))
	for k := range all {
		extra = append(extra, k)
	}
	sort.Strings(extra)
	for _, k := range extra {
		parts = append(parts, fmt.Sprintf("%s %d", k, all[k]))
	}
	return strings.Join(parts, ", ")
}

func withKeys(counts map[string]int, keys []string) map[string]int {
	out := make(map[string]int, len(counts)+len(keys))
	maps.Copy(out, counts)
	for _, k := range keys {
		out[k] += 0
	}
	return out
}

// RoundDuration keeps a tenth of a second (milliseconds below one
// second): enough for people, and stable in tests.
func RoundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}
