package output

import (
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// Changes says in a few words what changed between two printed states of one
// pod: the visible cells that differ (the server's columns and the -L label
// columns), or else the parts of the object.
func Changes(prev, cur *wire.PodRow, wide bool, labelColumns []string) string {
	if prev == nil || cur == nil {
		return ""
	}
	cells := changedCells(prev, cur, wide)
	cells = append(cells, changedLabels(prev.Meta().Labels, cur.Meta().Labels, labelColumns)...)
	if len(cells) > 0 {
		return strings.Join(cells, " ")
	}
	if prev.Parts != nil && cur.Parts != nil {
		return strings.Join(changedLeanParts(prev, cur), ",")
	}
	return strings.Join(changedParts(prev.Pod(), cur.Pod()), ",")
}

// changedLabels compares the label columns of -L, named as kubectl heads
// them: the key's last path segment in capitals.
func changedLabels(prev, cur map[string]string, keys []string) []string {
	var out []string
	for _, k := range keys {
		before, after := labelCell(prev, k), labelCell(cur, k)
		if before == after {
			continue
		}
		out = append(out, strings.ToUpper(labelHeader(k))+":"+before+"→"+after)
	}
	return out
}

// labelCell is a label's value as CHANGES shows it; a missing label reads
// <none>, since an empty string would vanish between the colon and arrow.
func labelCell(labels map[string]string, key string) string {
	if v, ok := labels[key]; ok {
		return v
	}
	return "<none>"
}

func changedCells(prev, cur *wire.PodRow, wide bool) []string {
	var out []string
	for i, col := range cur.Columns {
		if (col.Priority != 0 && !wide) || col.Name == "Age" || i >= len(cur.Cells) || i >= len(prev.Cells) {
			continue
		}
		before, after := fmt.Sprint(prev.Cells[i]), fmt.Sprint(cur.Cells[i])
		if col.Name == "Restarts" {
			// "3 (5m ago)" ages by itself; only the count is a change.
			before, after = restartCount(before), restartCount(after)
		}
		if before != after {
			out = append(out, strings.ToUpper(col.Name)+":"+before+"→"+after)
		}
	}
	return out
}

func restartCount(cell string) string {
	count, _, _ := strings.Cut(cell, " ")
	return count
}

// changedParts names the metadata fields, and the spec and status fields by
// their JSON names, that differ.
func changedParts(prev, cur *corev1.Pod) []string {
	if prev == nil || cur == nil {
		return nil
	}
	out := changedMeta(&prev.ObjectMeta, &cur.ObjectMeta)
	out = append(out, changedFields("spec", reflect.ValueOf(prev.Spec), reflect.ValueOf(cur.Spec))...)
	return append(out, changedFields("status", reflect.ValueOf(prev.Status), reflect.ValueOf(cur.Status))...)
}

func changedMeta(prev, cur *metav1.ObjectMeta) []string {
	return changedMetaWith(prev, cur, prev.Annotations, cur.Annotations, prev.Finalizers, cur.Finalizers)
}

// changedMetaWith compares the metadata fields CHANGES names; annotations
// and finalizers are given apart, as lean rows hold only their hashes.
func changedMetaWith(prev, cur *metav1.ObjectMeta, annotationsA, annotationsB, finalizersA, finalizersB interface{}) []string {
	fields := []struct {
		name string
		a, b interface{}
	}{
		{"labels", prev.Labels, cur.Labels},
		{"annotations", annotationsA, annotationsB},
		{"finalizers", finalizersA, finalizersB},
		{"ownerReferences", prev.OwnerReferences, cur.OwnerReferences},
		{"deletionTimestamp", prev.DeletionTimestamp, cur.DeletionTimestamp},
		{"deletionGracePeriodSeconds", prev.DeletionGracePeriodSeconds, cur.DeletionGracePeriodSeconds},
		{"generation", prev.Generation, cur.Generation},
	}
	var out []string
	for _, f := range fields {
		if !equality.Semantic.DeepEqual(f.a, f.b) {
			out = append(out, "metadata."+f.name)
		}
	}
	return out
}

func changedFields(prefix string, a, b reflect.Value) []string {
	var out []string
	t := a.Type()
	for i := range t.NumField() {
		if !equality.Semantic.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			out = append(out, prefix+"."+jsonName(t.Field(i)))
		}
	}
	return out
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// changedLeanParts is changedParts for lean rows, from the hashes of the
// parts they left out: the same names in the same order.
func changedLeanParts(prev, cur *wire.PodRow) []string {
	a, b := prev.Parts, cur.Parts
	out := changedMetaWith(prev.Meta(), cur.Meta(), a.Annotations, b.Annotations, a.Finalizers, b.Finalizers)
	out = append(out, changedHashes("spec", reflect.TypeFor[corev1.PodSpec](), a.Spec, b.Spec)...)
	return append(out, changedHashes("status", reflect.TypeFor[corev1.PodStatus](), a.Status, b.Status)...)
}

// changedHashes names the fields of t whose hashes differ; both lists are
// sorted by field index.
func changedHashes(prefix string, t reflect.Type, a, b []wire.PartHash) []string {
	var out []string
	for len(a) > 0 || len(b) > 0 {
		switch {
		case len(b) == 0 || len(a) > 0 && a[0].Field < b[0].Field:
			out, a = append(out, prefix+"."+jsonName(t.Field(int(a[0].Field)))), a[1:]
		case len(a) == 0 || b[0].Field < a[0].Field:
			out, b = append(out, prefix+"."+jsonName(t.Field(int(b[0].Field)))), b[1:]
		default:
			if a[0].Hash != b[0].Hash {
				out = append(out, prefix+"."+jsonName(t.Field(int(a[0].Field))))
			}
			a, b = a[1:], b[1:]
		}
	}
	return out
}
