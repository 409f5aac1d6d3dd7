package output

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
)

// The tabwriter never re-pads a line it has written, so a cell wider than
// any before it shifts its line. Columns whose values grow as pods change
// start wide enough for their usual values.
var typicalWidths = map[string]int{
	"Event":    len("UPDATE"),
	"Status":   len("ContainerCreating"),
	"Restarts": len("5 (10m ago)"),
	"Age":      len("5m30s"),
	"IP":       len("255.255.255.255"),
}

// cellPadding matches printers.GetNewTabWriter's padding.
const cellPadding = 3

// seedWidths returns starting widths for the columns as they will be
// printed: EVENT, CONTEXT with several contexts, NAMESPACE with -A, the
// visible server columns, CHANGES, then -L columns and LABELS.
func (w *Writer) seedWidths(cols []metav1.TableColumnDefinition) []int {
	names := []string{"Event"}
	if w.multi() {
		names = append(names, "Context")
	}
	if w.opts.AllNamespaces {
		names = append(names, "Namespace")
	}
	for _, c := range cols {
		if c.Priority == 0 || w.wide {
			names = append(names, c.Name)
		}
	}
	widths := make([]int, len(names))
	for i, n := range names {
		widths[i] = max(len(n), typicalWidths[n]) + cellPadding
	}
	if w.multi() {
		w.widenForContexts(names, widths)
	}
	if w.opts.Events {
		widths[0] = max(widths[0], len(message.Warning.String())+cellPadding)
	}
	return widths
}
