// Package source lists and watches pods for the informer. Each object it
// delivers is a PodRow: the Pod itself plus, when server-side printing is
// used, the table cells the API server computed for it, so the table output
// matches `kubectl get pods` on the same cluster.
package source

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// PodRow is one pod as the informer caches it. Objects held by the cache are
// shared and must be treated as read-only.
type PodRow struct {
	Pod *corev1.Pod
	// Cells are the server's table cells for this pod, in Columns order; nil
	// when the source does not request tables.
	Cells []interface{}
	// Columns is shared by every row of one source.
	Columns []metav1.TableColumnDefinition
	// Parts, on a lean row (see Lean), hashes what the pod no longer
	// holds; nil on a row with the whole pod.
	Parts *Parts
	// Raw, on a packed row (see Pack), is the whole pod's protobuf
	// encoding, which Whole decodes for the printer; Pod is then lean.
	// Bytes hold a pod in a third of the memory its decoded form takes,
	// and the garbage collector never scans them.
	Raw []byte
}

// Whole is the whole pod: decoded anew from a packed row, whose Pod is
// lean; the row's own Pod otherwise (shared: read-only).
func (r *PodRow) Whole() (*corev1.Pod, error) {
	if r.Raw == nil {
		return r.Pod, nil
	}
	pod := &corev1.Pod{}
	if err := pod.Unmarshal(r.Raw); err != nil {
		return nil, fmt.Errorf("decode pod %s/%s: %w", r.Pod.Namespace, r.Pod.Name, err)
	}
	return pod, nil
}

// GetObjectKind reports no kind: PodRow never travels over the wire.
func (r *PodRow) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// GetObjectMeta lets meta.Accessor, and so the cache's key functions, read the
// Pod's metadata.
func (r *PodRow) GetObjectMeta() metav1.Object { return &r.Pod.ObjectMeta }

// DeepCopyObject copies the pod and the cells; Columns stay shared.
func (r *PodRow) DeepCopyObject() runtime.Object {
	out := &PodRow{Columns: r.Columns, Parts: r.Parts, Raw: r.Raw} // Raw is never changed
	if r.Pod != nil {
		out.Pod = r.Pod.DeepCopy()
	}
	if r.Cells != nil {
		out.Cells = runtime.DeepCopyJSONValue(r.Cells).([]interface{})
	}
	return out
}

// PodRowList is what the source's List returns to the reflector.
type PodRowList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []PodRow
}

// DeepCopyObject copies every row.
func (l *PodRowList) DeepCopyObject() runtime.Object {
	out := &PodRowList{TypeMeta: l.TypeMeta}
	l.DeepCopyInto(&out.ListMeta)
	out.Items = make([]PodRow, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*PodRow)
	}
	return out
}

// StripManagedFields is the informer's transform: managedFields are never
// printed and are most of a pod's metadata, so they are dropped before the
// object reaches the cache.
func StripManagedFields(obj interface{}) (interface{}, error) {
	if row, ok := obj.(*PodRow); ok && row.Pod != nil {
		row.Pod.ManagedFields = nil
	}
	return obj, nil
}

// stripManagedFields drops the managedFields of a page just decoded, so
// that they can be freed while the next pages are read, rather than after
// the whole list has reached the informer's transform.
func stripManagedFields(pods *corev1.PodList) {
	for i := range pods.Items {
		pods.Items[i].ManagedFields = nil
	}
}

// Cell returns the row's cell for the named column (as the server names it,
// e.g. "Status"), or "" when the row has no such cell.
func Cell(r *PodRow, column string) string {
	i := columnIndex(r.Columns, column)
	if i < 0 || i >= len(r.Cells) {
		return ""
	}
	s, _ := r.Cells[i].(string)
	return s
}
