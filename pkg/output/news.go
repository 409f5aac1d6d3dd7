package output

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-podsync/kubectl-podsync/internal/events"
	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/diagnosis"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
)

var eventKind = corev1.SchemeGroupVersion.WithKind("Event")

// writeNews prints a DIAGNOSIS, WARNING or NORMAL message: news about a
// pod rather than its state.
//
//   - table: a diagnosis is indented lines under the pod's rows (its
//     failed containers' log tails, its Warning events, what is missing);
//     an Event is a line with its type in the EVENT column, the pod in the
//     NAME column (and NAMESPACE with -A), then REASON (xCOUNT): MESSAGE,
//     outside the pod columns.
//   - json, yaml: {"type": KIND, "object": ...}, the object being the
//     Diagnosis (see diagnosis.Diagnosis) or the Event.
//   - name: pod/NAME diagnosed, event/NAME warning, event/NAME normal.
//   - templates and custom columns: applied to the same object as json.
//
// Under GitHub Actions their text, which holds what the cluster wrote, is
// made safe as every other output is (see forGitHub).
func (w *Writer) writeNews(msg message.Message) error {
	if err := w.printNews(msg); err != nil {
		return fmt.Errorf("print %s %s: %w", msg.Type, msg.Key, err)
	}
	if w.holding() {
		return nil
	}
	return w.Flush()
}

func (w *Writer) printNews(msg message.Message) error {
	obj, err := newsObject(msg)
	if err != nil {
		return err
	}
	switch w.shape {
	case Table:
		_, err := io.WriteString(w.tw, w.newsLines(msg))
		return err
	case Event:
		if *w.opts.PrintFlags.OutputFormat == "json" {
			if msg.Diagnosis != nil {
				// The struct keeps the documented field order.
				return w.appendEventJSON(&w.buf, msg.Type, w.messageContext(msg), msg.Diagnosis)
			}
			return w.appendEventJSON(&w.buf, msg.Type, w.messageContext(msg), obj)
		}
		if w.multi() {
			envelope, err := w.envelope(msg, obj)
			if err != nil {
				return err
			}
			return w.printWhole(w.printer, envelope)
		}
		return w.printWhole(w.printer, &metav1.WatchEvent{Type: msg.Type.String(), Object: runtime.RawExtension{Object: obj}})
	case Name:
		if msg.Type == message.Diagnosis {
			if msg.Row == nil {
				return nil
			}
			return w.printName(msg, typedPod(msg.Row.Identity()))
		}
		return w.printName(msg, obj)
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("convert the %s for the printer: %w", msg.Type, err)
	}
	return w.printWhole(w.printer, &unstructured.Unstructured{Object: content})
}

// newsObject is the object a message carries: a typed copy of the Event,
// or the Diagnosis as an unstructured object.
func newsObject(msg message.Message) (runtime.Object, error) {
	if msg.Type != message.Diagnosis {
		if msg.Event == nil {
			return nil, fmt.Errorf("%s message without an Event", msg.Type)
		}
		ev := *msg.Event
		ev.TypeMeta = metav1.TypeMeta{APIVersion: eventKind.GroupVersion().String(), Kind: eventKind.Kind}
		ev.ManagedFields = nil
		return &ev, nil
	}
	if msg.Diagnosis == nil {
		return nil, fmt.Errorf("%s message without a diagnosis", msg.Type)
	}
	data, err := json.Marshal(msg.Diagnosis)
	if err != nil {
		return nil, fmt.Errorf("marshal the diagnosis: %w", err)
	}
	var content map[string]any
	if err := json.Unmarshal(data, &content); err != nil {
		return nil, fmt.Errorf("unmarshal the diagnosis: %w", err)
	}
	return &unstructured.Unstructured{Object: content}, nil
}

// diagnosisIndent starts the lines of a diagnosis in a table.
const diagnosisIndent = "    "

// newsLines is the table text of a message, escaped.
func (w *Writer) newsLines(msg message.Message) string {
	if msg.Type != message.Diagnosis {
		return w.eventLine(msg)
	}
	if w.told == nil {
		w.told = map[contextKey]*told{}
	}
	key := contextKey{context: w.messageContext(msg), key: msg.Key}
	t := w.told[key]
	if t == nil {
		t = &told{logs: map[string]string{}, warnings: map[string]int32{}, missing: map[string]bool{}}
		w.told[key] = t
	}
	return w.diagnosisLines(msg, t)
}

// told is what the table has shown of one pod's diagnoses: a pod is
// diagnosed when a container crashes and again in CrashLoopBackOff, often
// with the same log, so a table shows only what is new.
type told struct {
	// logs holds the last log tail shown per container; warnings the
	// count shown per Warning (reason and message); missing the notes
	// shown.
	logs     map[string]string
	warnings map[string]int32
	missing  map[string]bool
}

// eventLine is KIND, [NAMESPACE], NAME as table cells (aligned with the
// pod rows), then the Event as the line's last cell, which the tabwriter
// leaves out of the column widths.
func (w *Writer) eventLine(msg message.Message) string {
	ev := msg.Event
	var b strings.Builder
	b.WriteString(msg.Type.String() + "\t")
	if w.multi() {
		b.WriteString(msg.Context + "\t")
	}
	if w.opts.AllNamespaces {
		b.WriteString(cellText(ev.InvolvedObject.Namespace) + "\t")
	}
	b.WriteString(cellText(ev.InvolvedObject.Name) + "\t" + cellText(ev.Reason))
	if n := events.Count(ev); n > 1 {
		fmt.Fprintf(&b, " (x%d)", n)
	}
	b.WriteString(": " + cellText(text.OneLine(ev.Message, maxLineLen)) + "\n")
	return b.String()
}

// maxLineLen bounds one message or log line in a table.
const maxLineLen = 300

// diagnosisLines lists each failed container's log tail (or why there is
// none), the pod's Warning events (unless --events shows them) and what
// is missing, leaving out what t says was shown already.
func (w *Writer) diagnosisLines(msg message.Message, t *told) string {
	d := msg.Diagnosis
	name := d.Metadata.Name
	if w.opts.AllNamespaces {
		name = d.Key()
	}
	if w.multi() {
		name = msg.Context + " " + name
	}
	name = cellText(name)
	var b strings.Builder
	for _, c := range d.Containers {
		if c.Logs != nil {
			tail := fmt.Sprint(c.Logs.Error, c.Logs.Lines)
			if t.logs[c.Name] == tail {
				continue
			}
			t.logs[c.Name] = tail
		}
		writeContainerLog(&b, name, c)
	}
	for _, ev := range d.Events {
		said := ev.Reason + "\x00" + ev.Message
		// With --events the Warnings have rows of their own.
		if w.opts.Events || ev.Type != corev1.EventTypeWarning || t.warnings[said] >= ev.Count {
			continue
		}
		t.warnings[said] = ev.Count
		fmt.Fprintf(&b, "%s%s: Warning %s", diagnosisIndent, name, cellText(ev.Reason))
		if ev.Count > 1 {
			fmt.Fprintf(&b, " (x%d)", ev.Count)
		}
		fmt.Fprintf(&b, ": %s\n", cellText(text.OneLine(ev.Message, maxLineLen)))
	}
	for _, m := range d.Missing {
		if t.missing[m] {
			continue
		}
		t.missing[m] = true
		fmt.Fprintf(&b, "%s%s: missing %s\n", diagnosisIndent, name, cellText(text.OneLine(m, maxLineLen)))
	}
	return b.String()
}

func writeContainerLog(b *strings.Builder, pod string, c diagnosis.Container) {
	l := c.Logs
	switch {
	case l == nil:
		return
	case l.Error != "":
		fmt.Fprintf(b, "%s%s: no log of container %s: %s\n", diagnosisIndent, pod, cellText(c.Name), cellText(text.OneLine(l.Error, maxLineLen)))
		return
	}
	instance := "current instance"
	if l.Previous {
		instance = "previous instance"
	}
	fmt.Fprintf(b, "%s%s: container %s (%s), last %d log %s:\n", diagnosisIndent, pod, cellText(c.Name), instance, len(l.Lines), text.Plural(len(l.Lines), "line", "lines"))
	for _, line := range l.Lines {
		b.WriteString(diagnosisIndent + "  " + cellText(text.LogLine(line)) + "\n")
	}
	if l.Truncated {
		b.WriteString(diagnosisIndent + "  (long lines cut at the byte limit, ending with …)\n")
	}
}

// cellText makes text from the cluster safe for a terminal and for the
// tabwriter: escaped, with tabs (which would start a cell) made spaces.
func cellText(s string) string {
	s = text.Escape(s)
	if !strings.ContainsRune(s, '\t') {
		return s
	}
	return strings.ReplaceAll(s, "\t", "    ")
}
