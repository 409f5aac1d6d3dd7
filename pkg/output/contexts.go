package output

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
)

// A run over several contexts names each message's context: a CONTEXT
// column after EVENT in tables (before NAMESPACE with -A), "context" after
// "type" in the JSON and YAML envelopes, and the context before pod/NAME
// in -o name ("prod-eu pod/web-1 synced"). Templates and custom columns
// get the bare Pod, as kubectl's would, so they do not show it. With one
// context nothing changes.

// contextKey is a pod's key in one context: two clusters may both have
// shop/web-1.
type contextKey struct {
	context string
	key     cache.ObjectName
}

// contextPalette colours the CONTEXT column, one colour per context in
// the order they were given, again from the start after the last; none
// is an event colour, so the two columns never look alike.
var contextPalette = []string{
	"\x1b[96m", "\x1b[95m", "\x1b[94m", "\x1b[92m",
	"\x1b[93m", "\x1b[91m", "\x1b[1;36m", "\x1b[1;35m",
}

// multi reports whether messages name their context.
func (w *Writer) multi() bool { return len(w.opts.Contexts) > 1 }

// messageContext is the context a message names in the output, "" with
// one context.
func (w *Writer) messageContext(msg message.Message) string {
	if !w.multi() {
		return ""
	}
	return msg.Context
}

// contextColors maps each context to its colour.
func contextColors(contexts []string) map[string]string {
	m := map[string]string{}
	for i, c := range contexts {
		m[c] = contextPalette[i%len(contextPalette)]
	}
	return m
}

// leadColumns are the columns the writer puts before the server's: EVENT,
// CONTEXT with several contexts, and NAMESPACE with -A. The printer would
// add EVENT (for a WatchEvent) and NAMESPACE (WithNamespace) itself, but
// by building the columns and every cell of the table anew for each row,
// a tenth of a 50,000-pod table's CPU; and it would put NAMESPACE before
// CONTEXT.
func (w *Writer) leadColumns() []metav1.TableColumnDefinition {
	cols := []metav1.TableColumnDefinition{{Name: "Event", Type: "string"}}
	if w.multi() {
		cols = append(cols, metav1.TableColumnDefinition{Name: "Context", Type: "string", Description: "The kubeconfig context of the pod."})
	}
	if w.opts.AllNamespaces {
		cols = append(cols, metav1.TableColumnDefinition{Name: "Namespace", Type: "string"})
	}
	return cols
}

// appendLeadCells appends the cells of leadColumns for one message.
func (w *Writer) appendLeadCells(cells []any, msg message.Message, meta *metav1.ObjectMeta) []any {
	cells = append(cells, fmt.Sprintf("%-6s", msg.Type))
	if w.multi() {
		cells = append(cells, msg.Context)
	}
	if w.opts.AllNamespaces {
		cells = append(cells, meta.Namespace)
	}
	return cells
}

// severalWidths are starting widths of columns whose cells come from
// every context. Each context's initial list prints as one block when it
// is in, never waiting for the others, so a later block cannot widen the
// lines printed before it: these columns start wide enough for usual
// names (a Deployment's pods are its name and 17 characters more).
var severalWidths = map[string]int{
	"Name":      len("checkout-api-6c4c55c5b9-65d7h"),
	"Namespace": len("ingress-system"),
}

// widenForContexts widens the starting widths of a table over several
// contexts: CONTEXT as wide as the longest context name, so it never
// shifts, and the columns of severalWidths.
func (w *Writer) widenForContexts(names []string, widths []int) {
	for i, n := range names {
		width := severalWidths[n]
		if n == "Context" {
			for _, c := range w.opts.Contexts {
				width = max(width, len(c))
			}
		}
		widths[i] = max(widths[i], width+cellPadding)
	}
}

// printEventEnvelope prints a YAML (or KYAML) event with its context: the
// printers take the envelope as JSON, as they take a WatchEvent.
func (w *Writer) printEventEnvelope(msg message.Message, pod *corev1.Pod) error {
	envelope, err := w.envelope(msg, pod)
	if err != nil {
		return err
	}
	return w.printWhole(w.printer, envelope)
}

// envelope is {"type","context","object"} for the printers, which take it
// as JSON, as they take a WatchEvent.
func (w *Writer) envelope(msg message.Message, obj any) (runtime.Object, error) {
	var envelope bytes.Buffer
	if err := w.appendEventJSON(&envelope, msg.Type, msg.Context, obj); err != nil {
		return nil, err
	}
	return &runtime.Unknown{Raw: envelope.Bytes(), ContentType: runtime.ContentTypeJSON}, nil
}

// printName prints pod/NAME VERB, after the context with several.
func (w *Writer) printName(msg message.Message, obj runtime.Object) error {
	p := w.names[msg.Type]
	if !w.multi() {
		return w.printWhole(p, obj)
	}
	n := w.buf.Len()
	w.buf.WriteString(msg.Context + " ")
	if err := w.printWhole(p, obj); err != nil {
		w.buf.Truncate(n)
		return err
	}
	return nil
}

// colorContexts wraps the context cell, the second of each table row, in
// its context's colour. Like colorize it runs on aligned text; names are
// tried longest first, so that one context's name that starts another's
// cannot take its place.
func colorContexts(text []byte, colors map[string]string) []byte {
	names := make([]string, 0, len(colors))
	for n := range colors {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return colorCells(text, func(line []byte) (int, int, string) {
		start := cellAfterFirst(line)
		for _, n := range names {
			if cellIs(line[start:], n) {
				return start, start + len(n), colors[n]
			}
		}
		return 0, 0, ""
	})
}

// cellAfterFirst is where the second cell of a table line starts.
func cellAfterFirst(line []byte) int {
	i := bytes.IndexByte(line, ' ')
	if i < 0 {
		return len(line)
	}
	for i < len(line) && line[i] == ' ' {
		i++
	}
	return i
}

// cellIs reports whether rest starts with the whole cell name.
func cellIs(rest []byte, name string) bool {
	if !bytes.HasPrefix(rest, []byte(name)) {
		return false
	}
	return len(rest) == len(name) || rest[len(name)] == ' ' || rest[len(name)] == '\n'
}
