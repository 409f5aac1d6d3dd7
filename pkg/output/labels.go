package output

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/kubectl/pkg/cmd/get"
)

// labelColumns are the label columns of -L and --show-labels. kubectl's
// table printer appends them after every column of the table, which would
// put them after CHANGES; the writer adds them itself, before CHANGES, with
// the headers and cells kubectl gives them.
type labelColumns struct {
	keys []string // -L, in order
	all  bool     // --show-labels
}

// takeLabelColumns moves the label options from the print flags to the
// writer, so the printer built from the flags adds no label columns.
func takeLabelColumns(f *get.HumanPrintFlags) labelColumns {
	var l labelColumns
	if f.ColumnLabels != nil {
		l.keys = *f.ColumnLabels
		f.ColumnLabels = &[]string{}
	}
	if f.ShowLabels != nil {
		l.all = *f.ShowLabels
		f.ShowLabels = new(bool)
	}
	return l
}

func (l labelColumns) count() int {
	if l.all {
		return len(l.keys) + 1
	}
	return len(l.keys)
}

// labelHeader names a -L column by the key's last path segment, as
// kubectl does (app.kubernetes.io/name is NAME once printed in capitals).
func labelHeader(key string) string {
	return key[strings.LastIndex(key, "/")+1:]
}

// columns heads each -L column with labelHeader.
func (l labelColumns) columns() []metav1.TableColumnDefinition {
	cols := make([]metav1.TableColumnDefinition, 0, l.count())
	for _, k := range l.keys {
		cols = append(cols, metav1.TableColumnDefinition{Name: labelHeader(k), Type: "string"})
	}
	if l.all {
		cols = append(cols, metav1.TableColumnDefinition{Name: "Labels", Type: "string"})
	}
	return cols
}

// cells appends the pod's label cells: a missing -L label is empty and
// --show-labels lists them all (<none> when there are none), as in kubectl.
func (l labelColumns) cells(cells []interface{}, podLabels map[string]string) []interface{} {
	for _, k := range l.keys {
		cells = append(cells, podLabels[k])
	}
	if l.all {
		cells = append(cells, labels.FormatLabels(podLabels))
	}
	return cells
}
