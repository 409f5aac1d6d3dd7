// Package output prints messages through kubectl's own printers, and the
// summary that ends a check as text, JSON, Markdown and GitHub annotations
// (WriteSummaryText and the others). A Writer is not safe for concurrent
// use: one goroutine owns it and stdout.
package output

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/liggitt/tabwriter"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/kubectl-podsync/kubectl-podsync/internal/ghactions"
	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

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
	// Contexts are the contexts of a run over several, in the order their
	// colours follow; with fewer than two, messages do not name theirs.
	Contexts []string
	// Events: WARNING and NORMAL messages may come (--events), so the
	// EVENT column starts wide enough for them.
	Events bool
	// StopCommands, under GitHub Actions, is the run's random token for
	// ::stop-commands::; set, no text from the cluster can run a workflow
	// command (see forGitHub).
	StopCommands string
	Out          io.Writer
	// Now is the clock for the AGE column; tests fix it.
	Now func() time.Time
}

// Writer turns messages into output lines.
type Writer struct {
	opts    Options
	shape   Shape
	wide    bool
	printer printers.ResourcePrinter
	names   map[message.Type]printers.ResourcePrinter
	colors  map[string]string
	tw      *tabwriter.Writer
	buf     bytes.Buffer
	// unsent is text a Detached output refused (ErrBackedUp), sent first by
	// the next Flush.
	unsent []byte
	// scratch holds one message of a non-table printer until it has been
	// printed whole: a template that fails half-way must print nothing.
	scratch bytes.Buffer
	// podJSON writes -o json's pods straight from packed rows' bytes,
	// into jsonBuf.
	podJSON wire.PodJSON
	jsonBuf []byte
	// contextColors colour the CONTEXT column of a table.
	contextColors map[string]string
	// last is the previous state reported per key, for CHANGES.
	last map[contextKey]*wire.PodRow
	// buffered holds table lines back until Flush, so the initial list is
	// aligned as one block, as kubectl aligns its first table; other
	// shapes write a page in batches of batchBytes (see holding).
	buffered bool
	seeded   bool
	// labels are the -L and --show-labels columns of a table; cols are its
	// column definitions, built from the first row.
	labels labelColumns
	cols   []metav1.TableColumnDefinition
	// lead: leadColumns, which the options fix for the writer's life.
	lead []metav1.TableColumnDefinition
	// told is what a table has shown of each pod's diagnoses.
	told map[contextKey]*told
	// paused: under GitHub Actions, a stop-commands pause is open on the
	// output (see guardLines).
	paused bool
}

// New builds the printer; an error here is a usage error (bad -o value or
// template) and happens before any cluster call.
func New(o Options) (*Writer, error) {
	format := *o.PrintFlags.OutputFormat
	o.PrintFlags.SetKind(schema.GroupKind{Kind: "Pod"})
	if o.AllNamespaces && ShapeOf(format) != Table {
		// A table's NAMESPACE is the writer's own (leadColumns).
		if err := o.PrintFlags.EnsureWithNamespace(); err != nil {
			return nil, err
		}
	}
	var labels labelColumns
	if ShapeOf(format) == Table {
		labels = takeLabelColumns(o.PrintFlags.HumanReadableFlags)
	}
	p, err := o.PrintFlags.ToPrinter()
	if err != nil {
		return nil, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	w := &Writer{opts: o, shape: ShapeOf(format), wide: format == "wide", printer: p, last: map[contextKey]*wire.PodRow{}, labels: labels}
	if o.Color {
		w.colors = eventColors()
		if w.multi() {
			w.contextColors = contextColors(o.Contexts)
		}
	}
	if o.PrintFlags.TemplateFlags.TemplateArgument != nil && *o.PrintFlags.TemplateFlags.TemplateArgument != "" && format == "" {
		w.shape = Object
	}
	switch w.shape {
	case Table:
		w.tw = printers.GetNewTabWriter(&w.buf)
		w.lead = w.leadColumns()
	case Name:
		w.names = map[message.Type]printers.ResourcePrinter{}
		for _, k := range message.Types() {
			w.names[k] = &printers.NamePrinter{Operation: verb(k)}
		}
	}
	return w, nil
}

// Shape is the writer's output shape.
func (w *Writer) Shape() Shape { return w.shape }

// SetBuffered holds table lines back until Flush, and other lines until
// batchBytes of them are ready (true), or writes each message as it comes
// (false).
func (w *Writer) SetBuffered(b bool) { w.buffered = b }

// batchBytes is how much buffered output other than a table is written at
// once: a page of pods printed as JSON is then a few writes, not one per pod.
const batchBytes = 64 << 10

// holding reports whether what was just printed waits for a later write.
func (w *Writer) holding() bool {
	return w.buffered && (w.shape == Table || w.buf.Len() < batchBytes)
}

// Write prints one message. With --watch-only a SYNC message is remembered
// for CHANGES but not printed; a GONE without a known last state has
// nothing to print.
func (w *Writer) Write(msg message.Message) error {
	if !msg.Type.PodState() {
		return w.writeNews(msg)
	}
	key := contextKey{context: w.messageContext(msg), key: msg.Key}
	prev := w.last[key]
	if msg.Type == message.Gone {
		delete(w.last, key)
		delete(w.told, key)
	} else if w.shape == Table {
		w.last[key] = msg.Row
	}
	if !w.prints(msg) {
		return nil
	}
	if err := w.print(msg, prev); err != nil {
		return fmt.Errorf("print %s %s: %w", msg.Type, msg.Key, err)
	}
	if w.holding() {
		return nil
	}
	return w.Flush()
}

// PrintsWhole reports whether Write prints msg from its whole pod (which
// a packed row decodes for it), rather than from its metadata or not at all.
func (w *Writer) PrintsWhole(msg message.Message) bool {
	return msg.Type.PodState() && w.prints(msg) && w.shape != Table && w.shape != Name && !w.printsJSON()
}

// printsJSON: -o json prints a packed row's pod from its bytes (see
// wire.PodJSON), without the whole pod.
func (w *Writer) printsJSON() bool {
	return w.shape == Event && *w.opts.PrintFlags.OutputFormat == "json"
}

// prints reports whether a pod's message is printed: a hidden SYNC
// (--watch-only) and a GONE without a known last state are not.
func (w *Writer) prints(msg message.Message) bool {
	return msg.Row != nil && (msg.Type != message.Sync || !w.opts.WatchOnly)
}

// Flush writes out what is buffered.
func (w *Writer) Flush() error {
	if w.tw != nil {
		if err := w.tw.Flush(); err != nil {
			return err
		}
	}
	if len(w.unsent) > 0 {
		if _, err := w.opts.Out.Write(w.unsent); err != nil {
			return &WriteError{Err: err}
		}
		w.unsent = w.unsent[:0]
	}
	if w.buf.Len() == 0 {
		return nil
	}
	text := w.buf.Bytes()
	if w.shape == Table {
		text = trimLineEnds(text)
	}
	if w.contextColors != nil && w.shape == Table {
		text = colorContexts(text, w.contextColors)
	}
	text = w.forGitHub(text)
	if w.colors != nil {
		text = colorize(text, w.colors)
	}
	_, err := w.opts.Out.Write(text)
	if errors.Is(err, ErrBackedUp) {
		// Nothing was written: the text waits for the next Flush.
		w.unsent = append(w.unsent[:0], text...)
	}
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

func (w *Writer) print(msg message.Message, prev *wire.PodRow) error {
	if w.shape == Table {
		return w.printRow(msg, prev)
	}
	if w.shape == Name {
		// A name needs no more than the lean pod of a packed row.
		return w.printName(msg, typedPod(msg.Row.Identity()))
	}
	if w.printsJSON() {
		return w.printJSON(msg)
	}
	whole, err := msg.Row.Whole()
	if err != nil {
		return err
	}
	pod := typedPod(whole)
	if w.shape == Event {
		if w.multi() {
			return w.printEventEnvelope(msg, pod)
		}
		return w.printWhole(w.printer, &metav1.WatchEvent{Type: msg.Type.String(), Object: runtime.RawExtension{Object: pod}})
	}
	// kubectl get hands templates and custom columns an unstructured object:
	// a field that is not set is <none> in a custom column, not an empty
	// string, and times and numbers print as they do in JSON.
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		return fmt.Errorf("convert the pod for the printer: %w", err)
	}
	return w.printWhole(w.printer, &unstructured.Unstructured{Object: content})
}

// printWhole keeps what a failing printer wrote out of the output: kubectl's
// go-template printer writes a debugging dump to its writer before it
// returns the error, which belongs on stderr once, not on stdout per retry.
func (w *Writer) printWhole(p printers.ResourcePrinter, obj runtime.Object) error {
	w.scratch.Reset()
	if err := p.PrintObj(obj, &w.scratch); err != nil {
		return shortTemplateError(err)
	}
	text := w.scratch.Bytes()
	if w.gitHub() && w.shape == Event {
		safe, err := safeYAML(text)
		if err != nil {
			return err
		}
		text = safe
	}
	w.buf.Write(text)
	return nil
}

// templateDump starts the part of kubectl's template errors that repeats
// the template and the whole object.
const templateDump = ". Printing more information for debugging the template"

// shortTemplateError cuts the object dump off a template error, so the
// error a dropped key gets on stderr is one readable line.
func shortTemplateError(err error) error {
	msg := err.Error()
	i := strings.Index(msg, templateDump)
	if i < 0 {
		return err
	}
	return errors.New(strings.TrimSpace(msg[:i]))
}

// trimLineEnds drops the spaces the tabwriter pads an empty last cell with
// (CHANGES of SYNC, ADD and GONE), as kubectl's tables end without them.
func trimLineEnds(text []byte) []byte {
	out := text[:0]
	for len(text) > 0 {
		line, rest, found := bytes.Cut(text, []byte{'\n'})
		out = append(out, bytes.TrimRight(line, " ")...)
		if found {
			out = append(out, '\n')
		}
		text = rest
	}
	return out
}

// typedPod returns a shallow copy with apiVersion and kind set, as the
// printers need; the cached pod itself is never changed. A pod typed
// already (one decoded anew for the printer) is returned as it is.
func typedPod(p *corev1.Pod) *corev1.Pod {
	if p.TypeMeta == wire.PodTypeMeta() {
		return p
	}
	out := *p
	out.TypeMeta = wire.PodTypeMeta()
	return &out
}

// printRow prints one table row through kubectl's table printer.
func (w *Writer) printRow(msg message.Message, prev *wire.PodRow) error {
	if !w.seeded {
		w.seeded = true
		w.tw.SetRememberedWidths(w.seedWidths(msg.Row.Columns))
	}
	changes := ""
	if msg.Type == message.Update {
		changes = Changes(prev, msg.Row, w.wide, w.labels.keys)
	}
	return w.printer.PrintObj(w.tableRow(msg, changes), w.tw)
}

// tableRow builds a one-row table: the lead columns, the server's columns
// and cells with the AGE recomputed now, the label columns of -L and
// --show-labels, and CHANGES last. The label columns are built here rather
// than by the printer, which would put them after CHANGES.
func (w *Writer) tableRow(msg message.Message, changes string) *metav1.Table {
	row := msg.Row
	meta := row.Meta()
	cols := w.columns(row.Columns)
	cells := w.appendLeadCells(make([]any, 0, len(cols)), msg, meta)
	lead := len(cells)
	for _, c := range row.Cells {
		cells = append(cells, w.serverCell(c))
	}
	for i, c := range row.Columns {
		if c.Name == "Age" {
			cells[lead+i] = age(meta.CreationTimestamp, w.opts.Now())
		}
	}
	if w.gitHub() {
		changes = ghactions.Defuse(changes)
	}
	cells = append(w.labels.cells(cells, meta.Labels), cellText(changes))
	// No object: the printer would read only its namespace and labels,
	// whose columns are built here.
	return &metav1.Table{ColumnDefinitions: cols, Rows: []metav1.TableRow{{Cells: cells}}}
}

// serverCell is a cell of the server's table as kubectl prints it (its
// printer shows ESC as ^[ and cuts a cell at a line break), with the
// control characters kubectl lets through (BEL, backspace, C1, bidi
// overrides) escaped, and under GitHub Actions defused.
func (w *Writer) serverCell(c any) any {
	s, ok := c.(string)
	if !ok {
		return c
	}
	if strings.ContainsFunc(s, passedControl) {
		var b strings.Builder
		for _, r := range s {
			if passedControl(r) {
				b.WriteString(text.Escape(string(r)))
			} else {
				b.WriteRune(r)
			}
		}
		s = b.String()
	}
	if w.gitHub() {
		s = ghactions.Defuse(s)
	}
	return s
}

// passedControl: a control character kubectl's table printer prints raw.
func passedControl(r rune) bool {
	return text.ControlChar(r) && r != '\r' && r != '\f' && r != 0x1b
}

var changesColumn = metav1.TableColumnDefinition{Name: "Changes", Type: "string", Description: "What changed since the previous message for this pod."}

// columns returns the table's column definitions, built once from the
// server's, so every message shares them and the header prints once.
func (w *Writer) columns(server []metav1.TableColumnDefinition) []metav1.TableColumnDefinition {
	if w.cols == nil || len(w.cols) != len(w.lead)+len(server)+w.labels.count()+1 {
		w.cols = append(append(append(slices.Clone(w.lead), server...), w.labels.columns()...), changesColumn)
	}
	return w.cols
}

func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}
