package output

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
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// maxTextLen bounds one message in the text summary; termination
// messages can be kilobytes long. JSON keeps them whole.
const maxTextLen = text.MaxLineLen

// summaryJSON is the wire shape of WriteSummaryJSON.
type summaryJSON struct {
	Verdict         string                 `json:"verdict"`
	ExitCode        int                    `json:"exitCode"`
	DurationSeconds float64                `json:"durationSeconds"`
	Pods            int                    `json:"pods"`
	Statuses        map[string]int         `json:"statuses"`
	Events          map[string]int         `json:"events"`
	Reason          string                 `json:"reason,omitempty"`
	Targets         []check.TargetSummary  `json:"targets,omitempty"`
	LeftBehind      []check.LeftBehindPod  `json:"leftBehind,omitempty"`
	Unsatisfied     []check.PodExplanation `json:"unsatisfied"`
	Omitted         int                    `json:"omitted,omitempty"`
	Contexts        []check.ContextSummary `json:"contexts,omitempty"`
	Stability       *check.Stability       `json:"stability,omitempty"`
}

// WriteSummaryJSON writes the summary as exactly one compact JSON object
// on one line. The shape is stable:
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
// (see check.TargetSummary):
//
//	"targets":[{"kind":"Deployment","namespace":"shop","name":"web",
//	  "verdict":"met","reason":"rolled out 3/3","pods":3,"metAfterSeconds":14.2}]
//
// Pods in phase Failed that their controller replaces (evicted, shut
// down with their node) are matched but not judged; leftBehind lists each
// (see check.LeftBehindPod), and is left out when there is none:
//
//	"leftBehind":[{"namespace":"shop","name":"web-7d4f-x2","reason":"Evicted",
//	  "message":"The node was low on resource: memory. ...","ownerKind":"ReplicaSet","ownerName":"web-7d4f"}]
//
// With --stable-for, stability says what became of the window (see
// check.Stability); outcome is held, broken, cut short or not opened:
//
//	"stability":{"stableForSeconds":30,"outcome":"broken","heldSeconds":10.2,
//	  "reason":"Restarted","pod":"shop/web-1","container":"app","message":"restarts 0 -> 1"}
func WriteSummaryJSON(w io.Writer, s check.Summary) error {
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
		Stability:       s.Stability,
	}
	if out.Unsatisfied == nil {
		out.Unsatisfied = []check.PodExplanation{}
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

// WriteSummaryText writes the summary for people, in kubectl describe
// style. It is built in memory and written at once so it is not
// interleaved with other stderr lines.
func WriteSummaryText(w io.Writer, s check.Summary) error {
	if _, err := io.WriteString(w, summaryText(s)); err != nil {
		return fmt.Errorf("writing summary: %w", err)
	}
	return nil
}

func summaryText(s check.Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Verdict:  %s (exit %d) after %s\n", s.Verdict, s.ExitCode, check.RoundDuration(s.Duration))
	if s.Reason != "" {
		fmt.Fprintf(&b, "Reason:   %s\n", text.SafeLine(s.Reason, maxTextLen))
	}
	if s.Stability != nil {
		fmt.Fprintf(&b, "Stable:   %s\n", text.SafeLine(s.Stability.String(), maxTextLen))
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
	return b.String()
}

func writePod(b *strings.Builder, p *check.PodExplanation) {
	fmt.Fprintf(b, "Pod %s is not satisfied:\n", p.QualifiedName())
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

func writeContainer(b *strings.Builder, c *check.ContainerExplanation) {
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

// writeLogTail writes a container's log tail under its line, each line
// escaped and cut to maxTextLen, or why there is none.
func writeLogTail(b *strings.Builder, c *check.ContainerExplanation) {
	l := c.Logs
	if l == nil {
		return
	}
	switch {
	case l.Error != "":
		fmt.Fprintf(b, "    Log: not available: %s\n", text.SafeLine(l.Error, maxTextLen))
		return
	case len(l.Lines) == 0:
		fmt.Fprintf(b, "    Log: empty (%s)\n", logInstance(l))
		return
	}
	fmt.Fprintf(b, "    Log, last %d %s (%s):\n", len(l.Lines), text.Plural(len(l.Lines), "line", "lines"), logInstance(l))
	for _, line := range l.Lines {
		fmt.Fprintf(b, "      %s\n", text.LogLine(line))
	}
	if l.Truncated {
		b.WriteString("      (long lines cut at the byte limit, ending with …)\n")
	}
}

func logInstance(l *check.LogTail) string {
	if l.Previous {
		return "previous instance"
	}
	return "current instance"
}

// writeEvents writes a pod's folded events, escaped.
func writeEvents(b *strings.Builder, events []check.EventExplanation) {
	if len(events) == 0 {
		b.WriteString("  Events: none\n")
		return
	}
	b.WriteString("  Events (warnings first, newest first):\n")
	for _, ev := range events {
		age := ev.Age
		if age == "" {
			age = "<unknown>"
		}
		fmt.Fprintf(b, "    %s ago  %s  %s  x%d  %s\n", age, text.SafeLine(ev.Type, 0), text.SafeLine(ev.Reason, 0), ev.Count, text.SafeLine(ev.Message, maxTextLen))
	}
}

// writeContexts writes a line per context, its columns aligned:
//
//	Contexts: prod-eu  met     3 pods  all 3 matching pods satisfy ready
//	          prod-us  failed  1 pod   pod shop/web-1: container "app" is CrashLoopBackOff
func writeContexts(b *strings.Builder, contexts []check.ContextSummary) {
	pods := make([]string, len(contexts))
	names := make([]string, len(contexts))
	nameWidth, verdictWidth, podsWidth := 0, 0, 0
	for i, c := range contexts {
		pods[i] = fmt.Sprintf("%d %s", c.Pods, text.Plural(c.Pods, "pod", "pods"))
		names[i] = text.SafeLine(c.Name, 0)
		nameWidth, verdictWidth = max(nameWidth, len(names[i])), max(verdictWidth, len(c.Verdict))
		podsWidth = max(podsWidth, len(pods[i]))
	}
	for i, c := range contexts {
		head := "Contexts: "
		if i > 0 {
			head = strings.Repeat(" ", len(head))
		}
		line := fmt.Sprintf("%s%-*s  %-*s  %-*s  %s", head, nameWidth, names[i], verdictWidth, c.Verdict, podsWidth, pods[i], text.SafeLine(c.Reason, maxTextLen))
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
}

// writeTargets writes "Targets:  deployment/web: rolled out 3/3 in 14.2s",
// one target a line.
func writeTargets(b *strings.Builder, targets []check.TargetSummary) {
	for i, t := range targets {
		label := "          "
		if i == 0 {
			label = "Targets:  "
		}
		name, reason := targetLabel(t), targetReason(t)
		switch t.Verdict {
		case check.TargetMet:
			fmt.Fprintf(b, "%s%s: %s in %s\n", label, name, reason,
				check.RoundDuration(time.Duration(t.MetAfterSeconds*float64(time.Second))))
		default:
			fmt.Fprintf(b, "%s%s: %s: %s\n", label, name, t.Verdict, reason)
		}
	}
}

// targetLabel names the target as the summary lines do: deployment/web,
// with -n and --context where they are needed to tell targets apart. A
// target's name comes from the command line or a manifest, which need
// not be the user's own: it is escaped like cluster text.
func targetLabel(t check.TargetSummary) string {
	name := check.KindName(t.APIVersion, t.Kind) + "/" + t.Name
	if t.ShowNamespace {
		name += " -n " + t.Namespace
	}
	if t.Context != "" {
		name += " --context " + t.Context
	}
	return text.SafeLine(name, 0)
}

// targetReason is the target's reason, with the rule that decided it.
func targetReason(t check.TargetSummary) string {
	reason := t.Reason
	if t.Rule != "" {
		reason += " (" + t.Rule + ")"
	}
	return text.SafeLine(reason, maxTextLen)
}
