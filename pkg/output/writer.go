// Package output prints messages through kubectl's own printers. A Writer is
// not safe for concurrent use: one goroutine owns it and stdout.
package output

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/liggitt/tabwriter"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/controller"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source"
)

var podKind = corev1.SchemeGroupVersion.WithKind("Pod")

// Shape is how a message reaches the printer.
type Shape int

const (
	// Table rows: EVENT, the server's pod columns, CHANGES.
	Table Shape = iota
	// Event wraps the pod as {"type": ..., "object": ...} (json, yaml).
	Event
	// Name prints pod/NAME with a verb per event.
	Name
	// Object hands the bare Pod to a template or custom-columns printer.
	Object
)

// ShapeOf tells which shape an -o value prints in.
func ShapeOf(format string) Shape {
	switch format {
	case "", "wide":
		return Table
	case "json", "yaml", "kyaml":
		return Event
	case "name":
		return Name
	}
	return Object
}

// Options configure a Writer.
type Options struct {
	PrintFlags    *get.PrintFlags
	AllNamespaces bool
	WatchOnly     bool
	Color         bool
	Out           io.Writer
	// Now is the clock for the AGE column; tests fix it.
	Now func() time.Time
}

// Writer turns messages into output lines.
type Writer struct {
	opts    Options
	shape   Shape
	wide    bool
	printer printers.ResourcePrinter
	names   map[controller.Kind]printers.ResourcePrinter
	tw      *tabwriter.Writer
	buf     bytes.Buffer
	// last is the previous state reported per key, for CHANGES.
	last map[string]*source.PodRow
	// buffered holds table lines back until Flush, so the initial list is
	// aligned as one block, as kubectl aligns its first table.
	buffered bool
	seeded   bool
}

// New builds the printer; an error here is a usage error (bad -o value or
// template) and happens before any cluster call.
func New(o Options) (*Writer, error) {
	format := *o.PrintFlags.OutputFormat
	o.PrintFlags.SetKind(schema.GroupKind{Kind: "Pod"})
	if o.AllNamespaces {
		if err := o.PrintFlags.EnsureWithNamespace(); err != nil {
			return nil, err
		}
	}
	p, err := o.PrintFlags.ToPrinter()
	if err != nil {
		return nil, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	w := &Writer{opts: o, shape: ShapeOf(format), wide: format == "wide", printer: p, last: map[string]*source.PodRow{}}
	if o.PrintFlags.TemplateFlags.TemplateArgument != nil && *o.PrintFlags.TemplateFlags.TemplateArgument != "" && format == "" {
		w.shape = Object
	}
	switch w.shape {
	case Table:
		w.tw = printers.GetNewTabWriter(&w.buf)
	case Name:
		w.names = map[controller.Kind]printers.ResourcePrinter{}
		for k, verb := range map[controller.Kind]string{controller.Sync: "synced", controller.Add: "added", controller.Update: "updated", controller.Gone: "gone"} {
			w.names[k] = &printers.NamePrinter{Operation: verb}
		}
	}
	return w, nil
}

// Shape is the writer's output shape.
func (w *Writer) Shape() Shape { return w.shape }

// SetBuffered holds table lines back until Flush (true) or writes each
// message as it comes (false).
func (w *Writer) SetBuffered(b bool) { w.buffered = b }

// Write prints one message. With --watch-only a SYNC message is remembered
// for CHANGES but not printed.
func (w *Writer) Write(msg controller.Message) error {
	prev := w.last[msg.Key]
	if msg.Kind == controller.Gone {
		delete(w.last, msg.Key)
	} else if w.shape == Table {
		w.last[msg.Key] = msg.Row
	}
	if msg.Kind == controller.Sync && w.opts.WatchOnly {
		return nil
	}
	if err := w.print(msg, prev); err != nil {
		return fmt.Errorf("print %s %s: %w", msg.Kind, msg.Key, err)
	}
	if w.shape == Table && w.buffered {
		return nil
	}
	return w.Flush()
}

// Flush writes out what is buffered.
func (w *Writer) Flush() error {
	if w.tw != nil {
		if err := w.tw.Flush(); err != nil {
			return err
		}
	}
	if w.buf.Len() == 0 {
		return nil
	}
	text := w.buf.Bytes()
	if w.opts.Color {
		text = colorize(text)
	}
	_, err := w.opts.Out.Write(text)
	w.buf.Reset()
	if err != nil {
		return &WriteError{Err: err}
	}
	return nil
}

// WriteError is a failure to write to the output itself, as opposed to a
// message the printer could not format: retrying cannot help it.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return "write output: " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

func (w *Writer) print(msg controller.Message, prev *source.PodRow) error {
	pod := typedPod(msg.Row.Pod)
	switch w.shape {
	case Table:
		ev := w.tableEvent(msg, prev, pod)
		if !w.seeded {
			w.seeded = true
			w.tw.SetRememberedWidths(w.seedWidths(msg.Row.Columns))
		}
		return w.printer.PrintObj(ev, w.tw)
	case Event:
		return w.printer.PrintObj(&metav1.WatchEvent{Type: msg.Kind.String(), Object: runtime.RawExtension{Object: pod}}, &w.buf)
	case Name:
		return w.names[msg.Kind].PrintObj(pod, &w.buf)
	}
	return w.printer.PrintObj(pod, &w.buf)
}

// typedPod returns a shallow copy with apiVersion and kind set, as the
// printers need; the cached pod itself is never changed.
func typedPod(p *corev1.Pod) *corev1.Pod {
	out := *p
	out.TypeMeta = metav1.TypeMeta{APIVersion: podKind.GroupVersion().String(), Kind: podKind.Kind}
	return &out
}

var changesColumn = metav1.TableColumnDefinition{Name: "Changes", Type: "string", Description: "What changed since the previous message for this pod."}

// tableEvent builds a one-row table with the server's columns and cells,
// the AGE recomputed now, and CHANGES at the end.
func (w *Writer) tableEvent(msg controller.Message, prev *source.PodRow, pod *corev1.Pod) *metav1.WatchEvent {
	row := msg.Row
	cols := append(slices.Clip(row.Columns), changesColumn)
	cells := make([]interface{}, len(row.Columns), len(cols))
	copy(cells, row.Cells)
	for i, c := range row.Columns {
		if c.Name == "Age" && i < len(cells) {
			cells[i] = age(pod.CreationTimestamp, w.opts.Now())
		}
	}
	changes := ""
	if msg.Kind == controller.Update {
		changes = Changes(prev, row, w.wide)
	}
	cells = append(cells, changes)
	table := &metav1.Table{
		ColumnDefinitions: cols,
		Rows:              []metav1.TableRow{{Cells: cells, Object: runtime.RawExtension{Object: pod}}},
	}
	return &metav1.WatchEvent{Type: fmt.Sprintf("%-6s", msg.Kind), Object: runtime.RawExtension{Object: table}}
}

func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}
