package wire

import (
	"github.com/kubectl-podsync/kubectl-podsync/internal/podtest"

	"bytes"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/randfill"
)

// The plan covers every type a pod holds.
func TestPodJSONHasAPlan(t *testing.T) {
	if _, err := podPlan(); err != nil {
		t.Fatal(err)
	}
}

// A packed row's JSON is, byte for byte, encoding/json's JSON of the
// decoded pod, for pods with every field set at random.
func TestPodJSONIsEncodingJSONOfTheDecodedPod(t *testing.T) {
	// A FieldsV1 holds JSON; random bytes would not marshal either way.
	fields := []string{`{"f:a":{}}`, `{ "f:b" : { "<x>": 1 } }`, `{}`}
	fill := randfill.NewWithSeed(17).NilChance(0.2).NumElements(0, 3).Funcs(
		func(f *metav1.FieldsV1, c randfill.Continue) { f.SetRawString(fields[c.Intn(len(fields))]) })
	var j PodJSON
	for i := range 1000 {
		var p corev1.Pod
		fill.Fill(&p)
		p.TypeMeta = PodTypeMeta()
		if i%7 == 0 {
			p.Annotations = map[string]string{"a<b>&c": "\u2028 \"quoted\" \x01 é \xff", "": ""}
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{})
			// A zero time is served as an empty message, which omitzero
			// leaves out.
			p.CreationTimestamp = metav1.Time{}
		}
		raw, _ := podtest.Served(t, &p)
		// --show-managed-fields keeps them in the bytes.
		row, err := (&Decoder{Pack: true, KeepManagedFields: i%2 == 0}).DecodePod(raw)
		if err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
		whole, err := row.Whole()
		if err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
		want, err := json.Marshal(whole)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := j.Append([]byte("x"), &row)
		if !ok {
			t.Fatalf("pod %d: no JSON from the bytes", i)
		}
		if !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("pod %d:\n got %s\nwant %s", i, got[1:], want)
		}
	}
}

// Bytes the plan cannot write exactly leave dst as it was.
func TestPodJSONFallsBackOnBytesItCannotWrite(t *testing.T) {
	var p corev1.Pod
	p.Name = "a"
	raw, _ := podtest.Served(t, &p)
	twice := append(bytes.Clone(raw), raw...) // metadata given twice
	var j PodJSON
	for _, row := range []PodRow{{Raw: twice}, {whole: &p}} {
		if got, ok := j.Append([]byte("x"), &row); ok || string(got) != "x" {
			t.Errorf("got %q, %v; want the buffer as it was and false", got, ok)
		}
	}
}

// BenchmarkPodJSON compares a packed row's JSON written from its bytes
// with decoding the pod and marshalling it.
func BenchmarkPodJSON(b *testing.B) {
	p := podtest.BenchPod()
	p.TypeMeta = PodTypeMeta()
	raw, _ := podtest.Served(b, p)
	row, err := (&Decoder{Pack: true}).DecodePod(raw)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decode-and-marshal", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			whole, err := row.Whole()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(whole); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("from-bytes", func(b *testing.B) {
		b.ReportAllocs()
		var j PodJSON
		var out []byte
		for range b.N {
			var ok bool
			if out, ok = j.Append(out[:0], &row); !ok {
				b.Fatal("no JSON from the bytes")
			}
		}
	})
}
