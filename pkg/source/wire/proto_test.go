package wire

import (
	"github.com/kubectl-podsync/kubectl-podsync/internal/podtest"

	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// encodeList encodes pods as the API server answers a protobuf list.
func encodeList(t testing.TB, pods ...corev1.Pod) []byte {
	t.Helper()
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next"}, Items: pods}
	raw, err := list.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	unknown := &runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Raw: raw}
	body, err := unknown.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte("k8s\x00"), body...)
}

// A pod read from a list's bytes is the pod the client would decode,
// without managedFields; a lean one is exactly what Lean makes of the
// decoded pod, as a watch event's pod becomes (same parts, same hashes),
// so that CHANGES compares a listed and a watched state fairly.
func TestDecodePodFromListBytes(t *testing.T) {
	p := *podtest.BenchPod()
	p.Annotations = map[string]string{"b": "2", "a": "1"}
	p.Finalizers = []string{"example.com/keep"}
	page := readList(t, iotest.OneByteReader(bytes.NewReader(encodeList(t, p, podtest.Pod("b", "web-2", "7")))))
	if page.meta.ResourceVersion != "42" || page.meta.Continue != "next" || len(page.items) != 2 {
		t.Fatalf("page %+v with %d items", page.meta, len(page.items))
	}
	whole, err := (&Decoder{}).DecodePod(page.items[0])
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{} // as the client decodes it
	if err := want.Unmarshal(page.items[0]); err != nil {
		t.Fatal(err)
	}
	want.ManagedFields = nil
	if !equality.Semantic.DeepEqual(whole.Pod(), want) {
		t.Errorf("whole pod differs from the client's decoding:\n%+v\n%+v", whole.Pod(), want)
	}
	lean, err := (&Decoder{Lean: true}).DecodePod(page.items[0])
	if err != nil {
		t.Fatal(err)
	}
	watched := &PodRow{whole: want.DeepCopy()}
	Lean(watched)
	if !reflect.DeepEqual(lean.Pod(), watched.Pod()) || !reflect.DeepEqual(lean.Parts, watched.Parts) {
		t.Errorf("a lean pod from a list differs from a lean watched pod:\nlist  %+v %+v\nwatch %+v %+v", lean.Pod(), lean.Parts, watched.Pod(), watched.Parts)
	}
	if lean.Pod().Annotations != nil || lean.Pod().ManagedFields != nil || lean.Parts.Annotations == 0 || lean.Parts.Finalizers == 0 || len(lean.Parts.Spec) == 0 {
		t.Errorf("lean pod keeps what it should hash, or hashes nothing: %+v %+v", lean.Pod().ObjectMeta, lean.Parts)
	}
}

// readPage is what readPodList handed on: the metadata and a copy of
// each pod's bytes.
type readPage struct {
	meta  metav1.ListMeta
	items [][]byte
}

func readList(t testing.TB, body io.Reader) readPage {
	t.Helper()
	var page readPage
	err := readPodList(body, func(m metav1.ListMeta) { page.meta = m }, func(raw []byte) error {
		page.items = append(page.items, bytes.Clone(raw))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return page
}

// An answer that is not a whole protobuf list is an error, never a
// shorter list.
func TestReadPodListRefusesBrokenAnswers(t *testing.T) {
	whole := encodeList(t, podtest.Pod("a", "web-1", "5"), podtest.Pod("b", "web-2", "7"))
	bad := map[string][]byte{
		"JSON":             []byte(`{"kind":"PodList"}`),
		"cut in a pod":     whole[:len(whole)-10],
		"cut in a varint":  append(bytes.Clone(whole), 0x8a),
		"empty":            nil,
		"envelope only":    []byte("k8s\x00"),
		"a varint field":   append([]byte("k8s\x00"), 0x08, 0x01),
		"a pod past a cut": append(bytes.Clone(whole), 0x12, 0x05, 'a'),
	}
	for name, body := range bad {
		err := readPodList(bytes.NewReader(body), func(metav1.ListMeta) {}, func([]byte) error { return nil })
		if err == nil {
			t.Errorf("%s: read without an error", name)
		}
	}
	stop := errors.New("stop")
	if err := readPodList(bytes.NewReader(whole), func(metav1.ListMeta) {}, func([]byte) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("an item's error was not passed on: %v", err)
	}
}

func BenchmarkDecodePod(b *testing.B) {
	page := readList(b, bytes.NewReader(encodeList(b, *podtest.BenchPod())))
	for _, lean := range []bool{false, true} {
		name := "whole"
		if lean {
			name = "lean"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			d := &Decoder{Lean: lean}
			for range b.N {
				if _, err := d.DecodePod(page.items[0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A pod whose kept bytes do not decode is an error naming it when it is
// read, never a row whose Pod() panics later.
func TestMalformedPodIsAnErrorNamingIt(t *testing.T) {
	p := podtest.Pod("ns", "bad", "1")
	raw, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// A second status, the one read, whose condition ends inside its type.
	status := protowire.AppendTag(nil, 2, protowire.BytesType)
	status = protowire.AppendBytes(status, []byte{0x0a, 0x05, 'R'})
	bad := protowire.AppendTag(bytes.Clone(raw), podStatus, protowire.BytesType)
	bad = protowire.AppendBytes(bad, status)
	for _, c := range []struct {
		name string
		d    Decoder
	}{{"lean", Decoder{Lean: true}}, {"packed", Decoder{Pack: true}}} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if v := recover(); v != nil {
					t.Errorf("panic: %v", v)
				}
			}()
			row, err := c.d.DecodePod(bad)
			if err == nil {
				_ = row.Pod()
				t.Fatal("a malformed pod was read")
			}
			if !strings.Contains(err.Error(), "ns/bad") {
				t.Errorf("the error does not name the pod: %v", err)
			}
		})
	}
}
