package wire

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// roundTrip is the pod as a typed client decodes it from protobuf.
func roundTrip(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	_, out := served(t, p)
	return out
}

// served is the pod's protobuf bytes, as the server sends them, and the
// pod a typed client decodes from them.
func served(t testing.TB, p *corev1.Pod) ([]byte, *corev1.Pod) {
	t.Helper()
	raw, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	out := &corev1.Pod{}
	if err := out.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	return raw, out
}

// decoders are the ways a source makes rows of pods.
var decoders = []struct {
	name string
	d    Decoder
}{
	{"whole", Decoder{}},
	{"whole, managedFields kept", Decoder{KeepManagedFields: true}},
	{"lean", Decoder{Lean: true}},
	{"packed", Decoder{Pack: true}},
	{"packed, managedFields kept", Decoder{Pack: true, KeepManagedFields: true}},
}
