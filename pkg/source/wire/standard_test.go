package wire

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-podsync/kubectl-podsync/internal/features"
	"github.com/kubectl-podsync/kubectl-podsync/internal/podtest"
)

// With the FastCodec gate off, a protobuf list and a protobuf watch are
// read by client-go's decoding, and every row keeps its whole pod however
// the decoder was asked to shape it: the pods are the client's.
func TestFastCodecOffReadsWithTheStandardDecoding(t *testing.T) {
	defer features.SetForTest(features.FastCodec, false)()
	p := *podtest.BenchPod()
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	raw, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{} // as the client decodes it: times in seconds
	if err := want.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	want.ManagedFields = nil
	for _, d := range []Decoder{{}, {Lean: true}, {Pack: true}} {
		var rows []PodRow
		var meta metav1.ListMeta
		if err := ReadList(bytes.NewReader(encodeList(t, p)), &d, func(m metav1.ListMeta) { meta = m },
			func(r PodRow) { rows = append(rows, r) }); err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || meta.Continue != "next" {
			t.Fatalf("%+v: %d rows, continue %q", d, len(rows), meta.Continue)
		}
		checkWhole(t, "list", d, &rows[0], want)

		typ, obj, err := NewEvents(io.NopCloser(bytes.NewReader(watchFrame(t, p))), &d).Next()
		if err != nil || typ != "MODIFIED" {
			t.Fatalf("%+v: watch event %s, %v", d, typ, err)
		}
		checkWhole(t, "watch", d, obj.(*PodRow), want)
		row := RowOf(p.DeepCopy())
		Lean(row)
		if err := Pack(row, false); err != nil || row.whole == nil {
			t.Errorf("Lean and Pack changed a whole row (%v)", err)
		}
	}
}

func checkWhole(t *testing.T, where string, d Decoder, row *PodRow, want *corev1.Pod) {
	t.Helper()
	if row.whole == nil || row.Raw != nil || row.lean != nil || row.Parts != nil {
		t.Errorf("%s %+v: the row is not whole", where, d)
	}
	if !equality.Semantic.DeepEqual(row.Pod(), want) {
		t.Errorf("%s %+v: the pod differs from the client's", where, d)
	}
}

// watchFrame is one MODIFIED event of pod as a protobuf watch sends it.
func watchFrame(t *testing.T, pod corev1.Pod) []byte {
	t.Helper()
	raw, err := pod.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	inner, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Pod"}, Raw: raw}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	ev, err := (&metav1.WatchEvent{Type: "MODIFIED", Object: runtime.RawExtension{Raw: append([]byte("k8s\x00"), inner...)}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(ev))), ev...)
}
