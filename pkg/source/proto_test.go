package source

import (
	"reflect"
	"testing"

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
	p := *benchPod()
	p.Annotations = map[string]string{"b": "2", "a": "1"}
	p.Finalizers = []string{"example.com/keep"}
	page, err := parsePodList(encodeList(t, p, testPod("b", "web-2", "7")))
	if err != nil {
		t.Fatal(err)
	}
	if page.meta.ResourceVersion != "42" || page.meta.Continue != "next" || len(page.items) != 2 {
		t.Fatalf("page %+v with %d items", page.meta, len(page.items))
	}
	whole, err := (&decoder{}).decodePod(page.items[0])
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
	lean, err := (&decoder{lean: true}).decodePod(page.items[0])
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
	if _, err := parsePodList([]byte(`{"kind":"PodList"}`)); err == nil {
		t.Error("a JSON answer was read as protobuf")
	}
}

func BenchmarkDecodePod(b *testing.B) {
	page, err := parsePodList(encodeList(b, *benchPod()))
	if err != nil {
		b.Fatal(err)
	}
	for _, lean := range []bool{false, true} {
		name := "whole"
		if lean {
			name = "lean"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			d := &decoder{lean: lean}
			for range b.N {
				if _, err := d.decodePod(page.items[0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
