package wire

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"weak"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The table output prints the server's cells, and reads of the pod itself
// only its identity, labels, owners and the status the checks and their
// explanations judge. A lean row keeps just that, and a hash of each other
// part, so that CHANGES can still name a part that changed: at 150,000
// pods the full objects are most of the memory a run takes.

// Parts holds hashes of the parts of a pod that a lean row leaves out.
type Parts struct {
	Annotations, Finalizers uint32
	// Spec and Status hash each set field of the pod's spec and status,
	// by the field's index in the Go struct, in that order.
	Spec, Status []PartHash
}

// PartHash is the hash of one field of a struct, by the field's index. 32
// bits are plenty to tell two states of one field apart, and at 150,000
// pods the hashes are a good share of a lean row.
type PartHash struct {
	Field uint8
	Hash  uint32
}

// Lean replaces the row's pod with a copy holding only what the table
// output reads, and records the hashes of the rest in row.Parts, exactly
// as a lean row read from a list's bytes (DecodePod) gets them. The pod it
// replaces is not changed.
func Lean(row *PodRow) {
	if !fast() {
		return
	}
	if redecode(row, Decoder{Lean: true}) == nil {
		InternCells(row)
	}
}

// Pack makes a row of a whole pod packed: the outputs that print the whole
// pod (-o json, yaml, templates) keep its protobuf bytes, without
// managedFields unless kept, and the lean pod's metadata; the rest of the
// lean pod, for everything else the run reads, is read from those bytes
// when asked. The pod it replaces is not changed.
func Pack(row *PodRow, keepManagedFields bool) error {
	if !fast() {
		return nil
	}
	return redecode(row, Decoder{Pack: true, KeepManagedFields: keepManagedFields})
}

// redecode encodes the row's whole pod and reads it back with d, as a pod
// of a list's bytes would be read. A row already lean stays as it is.
func redecode(row *PodRow, d Decoder) error {
	if row.whole == nil {
		return nil
	}
	raw, err := row.whole.Marshal()
	if err != nil {
		return fmt.Errorf("encode pod %s/%s: %w", row.whole.Namespace, row.whole.Name, err)
	}
	got, err := d.DecodePod(raw)
	if err != nil {
		return fmt.Errorf("read pod %s/%s again: %w", row.whole.Namespace, row.whole.Name, err)
	}
	row.whole, row.meta, row.sets, row.lean, row.Parts, row.Raw = got.whole, got.meta, got.sets, got.lean, got.Parts, got.Raw
	return nil
}

// InternCells shares the words that recur from row to row. The Name cell
// shares the pod's name, and the IP cell is left alone: each is unique to
// its pod and would only crowd the common words out of the interned set.
func InternCells(row *PodRow) {
	name, ip := ColumnIndex(row.Columns, "Name"), ColumnIndex(row.Columns, "IP")
	for i, c := range row.Cells {
		str, ok := c.(string)
		switch {
		case !ok || i == ip:
		case i == name && str == row.Meta().Name:
			row.Cells[i] = row.Meta().Name
		default:
			row.Cells[i] = internBoxed(str)
		}
	}
}

// slimMeta is the part of a pod's metadata that a lean pod keeps, with
// the shared sets it holds, which its row keeps.
func slimMeta(m *metav1.ObjectMeta) (metav1.ObjectMeta, rowSets) {
	var sets rowSets
	out := metav1.ObjectMeta{Name: m.Name, Namespace: intern(m.Namespace), UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
		DeletionGracePeriodSeconds: m.DeletionGracePeriodSeconds}
	out.Labels, sets.labels = sharedLabels(m.Labels)
	out.OwnerReferences, sets.owners = sharedOwners(m.OwnerReferences)
	return out, sets
}

// The same few words recur in every pod (condition types, True, reasons,
// label keys and common values): a lean row shares one copy of each. The
// copy is kept boxed, so that a table cell (an interface) shares it too
// instead of boxing its own.
const (
	maxInterned    = 8192
	maxInternedLen = 64
)

var interned = struct {
	sync.Mutex
	m map[string]any
}{m: map[string]any{}}

func intern(s string) string { return internBoxed(s).(string) }

func internBoxed(s string) any {
	if s == "" || len(s) > maxInternedLen {
		return s
	}
	interned.Lock()
	defer interned.Unlock()
	if v, ok := interned.m[s]; ok {
		return v
	}
	var v any = s
	if len(interned.m) < maxInterned {
		interned.m[s] = v
	}
	return v
}

// Pods of one ReplicaSet, StatefulSet or Job mostly carry the same labels
// and the same owner: lean rows share one read-only copy of each set. A
// table holds a set only as long as some row does (each row keeps its sets,
// see PodRow.sets; the table's pointer is weak, and a cleanup drops the
// entry once the set is collected). Churn brings new label values and new
// owners all the time: the tables follow the pods held, not the sets ever
// seen.
type shared[T any] struct{ v T }

type setTable[T any] struct {
	sync.Mutex
	m map[string]weak.Pointer[shared[T]]
}

// share looks key up without copying it to a string: a copy is made only
// for a set not held by any row.
func (t *setTable[T]) share(key []byte, build func() T) *shared[T] {
	t.Lock()
	defer t.Unlock()
	if p, ok := t.m[string(key)]; ok {
		if s := p.Value(); s != nil {
			return s
		}
	}
	if t.m == nil {
		t.m = map[string]weak.Pointer[shared[T]]{}
	}
	s := &shared[T]{v: build()}
	k := string(key)
	t.m[k] = weak.Make(s)
	runtime.AddCleanup(s, t.drop, k)
	return s
}

// drop forgets key once its set is collected, unless a set built since
// has taken its place.
func (t *setTable[T]) drop(key string) {
	t.Lock()
	defer t.Unlock()
	if p, ok := t.m[key]; ok && p.Value() == nil {
		delete(t.m, key)
	}
}

// size is the number of sets held.
func (t *setTable[T]) size() int {
	t.Lock()
	defer t.Unlock()
	return len(t.m)
}

var (
	labelSets setTable[map[string]string]
	ownerSets setTable[[]metav1.OwnerReference]
)

// rowSets are the shared sets a lean row's metadata holds: the row keeps
// them, so that the tables keep them while the row is used.
type rowSets struct {
	labels *shared[map[string]string]
	owners *shared[[]metav1.OwnerReference]
}

// sharedLabels is a read-only map equal to in, shared by the pods with the
// same labels, and its set (nil for no labels).
func sharedLabels(in map[string]string) (map[string]string, *shared[map[string]string]) {
	if len(in) == 0 {
		return in, nil
	}
	var keys [16]string
	names := keys[:0]
	for k := range in {
		names = append(names, k)
	}
	slices.Sort(names)
	var buf [512]byte
	key := buf[:0]
	for _, k := range names {
		key = append(append(key, k...), 0)
		key = append(append(key, in[k]...), 0)
	}
	set := labelSets.share(key, func() map[string]string {
		out := make(map[string]string, len(in))
		for k, v := range in {
			// Values are not interned: a set shares its own, and values
			// that change (a step, a hash, a pod's own name) would fill
			// the interned words with what no pod holds any more.
			out[intern(k)] = v
		}
		return out
	})
	return set.v, set
}

// sharedOwners is a read-only slice equal to in, shared by the pods with
// the same owners, and its set (nil for no owners).
func sharedOwners(in []metav1.OwnerReference) ([]metav1.OwnerReference, *shared[[]metav1.OwnerReference]) {
	if len(in) == 0 {
		return in, nil
	}
	var buf [256]byte
	key := buf[:0]
	for _, o := range in {
		for _, s := range [...]string{o.APIVersion, o.Kind, o.Name, string(o.UID), flag(o.Controller), flag(o.BlockOwnerDeletion)} {
			key = append(append(key, s...), 0)
		}
	}
	set := ownerSets.share(key, func() []metav1.OwnerReference { return slices.Clone(in) })
	return set.v, set
}

// flag spells an optional bool for a key: unset, true or false.
func flag(b *bool) string {
	if b == nil {
		return "-"
	}
	return strconv.FormatBool(*b)
}

// sortParts orders hashes by field index.
func sortParts(p []PartHash) {
	slices.SortFunc(p, func(a, b PartHash) int { return int(a.Field) - int(b.Field) })
}
