package wire

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
	// whole is the pod of a row that keeps it whole; nil on a lean row.
	whole *corev1.Pod
	// A lean row (see Lean) keeps its pod's metadata as a struct, for the
	// cache's keys and every read of a pod's identity, labels and owners,
	// and the rest of its lean pod as protobuf bytes, decoded on each
	// read: a decoded corev1.Pod is 1,280 bytes before any field is set,
	// which at 150,000 pods was most of the cache.
	meta metav1.ObjectMeta
	// sets keeps the labels and owners meta shares with other rows in
	// their tables while the row is used.
	sets rowSets
	lean []byte
	// Cells are the server's table cells for this pod, in Columns order; nil
	// when the source does not request tables.
	Cells []interface{}
	// Columns is shared by every row of one source.
	Columns []metav1.TableColumnDefinition
	// Parts, on a lean row (see Lean), hashes what the pod no longer
	// holds; nil on a row with the whole pod.
	Parts *Parts
	// Raw, on a packed row (see Pack), is the whole pod's protobuf
	// encoding, which Whole decodes for the printer; Pod() is then the
	// lean pod, read from these bytes on each call.
	// Bytes hold a pod in a third of the memory its decoded form takes,
	// and the garbage collector never scans them.
	Raw []byte
}

// RowOf is a row of the whole pod, which the row shares (read-only).
func RowOf(pod *corev1.Pod) *PodRow { return &PodRow{whole: pod} }

// Pod is the row's pod: the whole one, shared and read-only, or on a lean
// row a new copy of the lean pod, whose metadata maps and slices are
// shared and read-only. A lean or packed row's bytes were read when the
// row was made (DecodePod refuses a pod they do not hold), so Pod has
// nothing to fail on; were they ever unreadable, it is the metadata alone,
// never a panic.
func (r *PodRow) Pod() *corev1.Pod {
	switch {
	case r.whole != nil:
		return r.whole
	case r.lean != nil:
		pod := &corev1.Pod{}
		if err := pod.Unmarshal(r.lean); err != nil {
			return &corev1.Pod{ObjectMeta: r.meta}
		}
		pod.ObjectMeta = r.meta
		return pod
	case r.Raw != nil:
		pod, err := packedLeanPod(r.meta, r.Raw)
		if err != nil {
			return &corev1.Pod{ObjectMeta: r.meta}
		}
		return pod
	}
	return nil
}

// Meta is the metadata of the row's pod (shared: read-only); it costs no
// decoding on a lean row.
func (r *PodRow) Meta() *metav1.ObjectMeta {
	if r.whole != nil {
		return &r.whole.ObjectMeta
	}
	return &r.meta
}

// Identity is the row's pod for readers of its metadata only (printers of
// names and table rows): the whole pod, or on a lean row a pod holding
// only the metadata, without decoding the rest.
func (r *PodRow) Identity() *corev1.Pod {
	if r.whole != nil {
		return r.whole
	}
	return &corev1.Pod{ObjectMeta: r.meta}
}

// Whole is the whole pod: decoded anew from a packed row, whose Pod() is
// lean; the row's own Pod otherwise (shared: read-only).
func (r *PodRow) Whole() (*corev1.Pod, error) {
	if r.Raw == nil {
		return r.Pod(), nil
	}
	pod := &corev1.Pod{}
	if err := pod.Unmarshal(r.Raw); err != nil {
		return nil, fmt.Errorf("decode pod %s/%s: %w", r.meta.Namespace, r.meta.Name, err)
	}
	// A new pod of its own: typed here, the printers need no copy of it.
	pod.TypeMeta = PodTypeMeta()
	return pod, nil
}

// PodTypeMeta is a pod's apiVersion and kind, which the printers need and
// a decoded pod lacks.
func PodTypeMeta() metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: "Pod"}
}

// Unpacked is a row of a packed row's whole pod, decoded once for readers
// of both its lean and its whole pod; r itself when it is not packed.
func (r *PodRow) Unpacked() (*PodRow, error) {
	if r.Raw == nil {
		return r, nil
	}
	pod, err := r.Whole()
	if err != nil {
		return r, err
	}
	return &PodRow{whole: pod, Cells: r.Cells, Columns: r.Columns}, nil
}

// GetObjectKind reports no kind: PodRow never travels over the wire.
func (r *PodRow) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// GetObjectMeta lets meta.Accessor, and so the cache's key functions, read the
// Pod's metadata.
func (r *PodRow) GetObjectMeta() metav1.Object { return r.Meta() }

// DeepCopyObject copies the pod and the cells; Columns stay shared.
func (r *PodRow) DeepCopyObject() runtime.Object {
	out := &PodRow{Columns: r.Columns, Parts: r.Parts, Raw: r.Raw, lean: r.lean} // the bytes are never changed
	r.meta.DeepCopyInto(&out.meta)
	if r.whole != nil {
		out.whole = r.whole.DeepCopy()
	}
	if r.Cells != nil {
		out.Cells = runtime.DeepCopyJSONValue(r.Cells).([]interface{})
	}
	return out
}

// StripManagedFields is the informer's transform: managedFields are never
// printed and are most of a pod's metadata, so they are dropped before the
// object reaches the cache. Most rows come without them already, and a
// row the stream may be reading (a page it observes) is only read here:
// a write, even of nil over nil, would race with that read.
func StripManagedFields(obj interface{}) (interface{}, error) {
	if row, ok := obj.(*PodRow); ok && row.whole != nil && row.whole.ManagedFields != nil {
		row.whole.ManagedFields = nil
	}
	return obj, nil
}

// Cell returns the row's cell for the named column (as the server names it,
// e.g. "Status"), or "" when the row has no such cell.
func Cell(r *PodRow, column string) string {
	i := ColumnIndex(r.Columns, column)
	if i < 0 || i >= len(r.Cells) {
		return ""
	}
	s, _ := r.Cells[i].(string)
	return s
}

// ColumnIndex is the index of the named column (as the server names it,
// e.g. "Status"), or -1.
func ColumnIndex(columns []metav1.TableColumnDefinition, name string) int {
	for i, c := range columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}
