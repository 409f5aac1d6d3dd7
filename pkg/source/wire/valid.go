package wire

import (
	"reflect"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A lean or packed row's pod is decoded on each read, so its bytes are
// checked once, when the row is made. Decoding them into a pod only to
// drop it was near half of the cost of a lean row; a walk of the bytes
// against the fields the API types declare costs no allocation. The walk
// is stricter than the decoder: what it accepts decodes, and what it
// refuses is decoded for the verdict (see leanError).

// protoMessage is what the decoder of a generated API type reads: its
// fields by number. A field it does not know is skipped by the decoder
// and by the walk alike.
type protoMessage struct {
	fields map[protowire.Number]protoField
	// opaque is a struct without protobuf fields, read by a hand-written
	// decoder (resource.Quantity): the walk refuses it.
	opaque bool
}

type protoField struct {
	wire protowire.Type
	// msg is the message a length-delimited field holds; nil for strings
	// and bytes.
	msg *protoMessage
}

// leanError is why a lean pod's bytes do not decode into a pod; nil
// when they do.
func leanError(lean []byte) error {
	if walk(lean, leanPodMessage()) {
		return nil
	}
	return (&corev1.Pod{}).Unmarshal(lean)
}

var leanPodMessage = sync.OnceValue(func() *protoMessage {
	return messageOf(reflect.TypeFor[corev1.Pod](), map[reflect.Type]*protoMessage{})
})

// walk says whether msg is well formed and each field the message knows
// has the wire type it declares, recursively.
func walk(msg []byte, m *protoMessage) bool {
	if m.opaque {
		return false
	}
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 || !num.IsValid() {
			return false
		}
		msg = msg[n:]
		f, known := m.fields[num]
		if known && f.wire != typ {
			return false
		}
		if known && f.msg != nil {
			value, n := protowire.ConsumeBytes(msg)
			if n < 0 || !walk(value, f.msg) {
				return false
			}
			msg = msg[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, msg)
		if n < 0 {
			return false
		}
		msg = msg[n:]
	}
	return true
}

// timestamp is the message behind metav1.Time, whose decoder is written
// by hand around it.
var timestamp = reflect.TypeFor[metav1.Timestamp]()

// messageOf is the message of a generated struct type, from its fields'
// protobuf tags; seen holds the types already made, for types that hold
// themselves.
func messageOf(t reflect.Type, seen map[reflect.Type]*protoMessage) *protoMessage {
	switch t {
	case reflect.TypeFor[metav1.Time](), reflect.TypeFor[metav1.MicroTime]():
		t = timestamp
	}
	if m, ok := seen[t]; ok {
		return m
	}
	m := &protoMessage{fields: map[protowire.Number]protoField{}}
	seen[t] = m
	for i := range t.NumField() {
		sf := t.Field(i)
		num, err := protoNum(sf.Tag.Get("protobuf"))
		if err != nil || num <= 0 {
			continue
		}
		m.fields[num] = fieldOf(sf.Type, seen)
	}
	m.opaque = len(m.fields) == 0
	return m
}

// fieldOf is how the decoder reads a field of Go type t. The wire type
// comes from the Go type, not from the tag's first word, which some
// fields get wrong (PodSpec's Priority, an int32, is tagged "bytes").
// What the walk does not know (floats, maps) gets a wire type no field
// has, and a packed repeated number differs from its varint: the walk
// refuses both.
func fieldOf(t reflect.Type, seen map[reflect.Type]*protoMessage) protoField {
	for t.Kind() == reflect.Pointer || (t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8) {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return protoField{wire: protowire.VarintType}
	case reflect.String, reflect.Slice:
		return protoField{wire: protowire.BytesType}
	case reflect.Struct:
		return protoField{wire: protowire.BytesType, msg: messageOf(t, seen)}
	}
	return protoField{wire: unknownWire}
}

// unknownWire is no wire type: a field of it is refused by the walk.
const unknownWire = protowire.Type(-1)
