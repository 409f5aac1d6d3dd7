package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"reflect"
	"slices"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A page of pods is read from its protobuf bytes here rather than decoded
// whole by the client: its list metadata first, so that the table of the
// same pods can be asked for at once, then each pod, either whole or, for
// a lean row, only the parts a lean row keeps (the spec is hashed, never
// decoded), which at tens of thousands of pods is most of the decoding
// and of the garbage a list makes.

// protobufMagic starts every protobuf answer of the API server; a
// runtime.Unknown holding the object follows.
var protobufMagic = []byte("k8s\x00")

// answerBuffer is the size of the buffer an answer is read through.
const answerBuffer = 64 << 10

// sniffBytes is how many bytes of an answer tell its encoding.
const sniffBytes = 32

// Field numbers of the messages read here (see their protobuf tags).
const (
	unknownRaw      = 2  // runtime.Unknown.Raw
	listMetadata    = 1  // PodList.ListMeta
	listItems       = 2  // PodList.Items
	podMetadata     = 1  // Pod.ObjectMeta
	podSpec         = 2  // Pod.Spec
	podStatus       = 3  // Pod.Status
	metaAnnotations = 12 // ObjectMeta.Annotations
	metaFinalizers  = 14 // ObjectMeta.Finalizers
	metaManaged     = 17 // ObjectMeta.ManagedFields
)

// readPodList reads a protobuf PodList answer as it arrives: its list
// metadata, handed to meta as soon as it is read, then each pod's bytes,
// handed to item. The bytes handed to item are reused for the next pod.
// The whole answer is never held: a page of 5,000 pods is some 14 MB,
// which the client would otherwise allocate, zero and collect, twice over
// as it grew, for every page.
func readPodList(body io.Reader, meta func(metav1.ListMeta), item func([]byte) error) error {
	r := &protoReader{r: bufio.NewReaderSize(body, answerBuffer)}
	magic := make([]byte, len(protobufMagic))
	if _, err := io.ReadFull(r.r, magic); err != nil || !bytes.Equal(magic, protobufMagic) {
		return errors.New("the answer is not protobuf")
	}
	found := false
	err := r.fields(-1, func(num protowire.Number, size int) error {
		if num != unknownRaw {
			return r.skip(size)
		}
		found = true
		return r.fields(size, func(num protowire.Number, size int) error {
			switch num {
			case listMetadata:
				return r.listMeta(size, meta)
			case listItems:
				value, err := r.read(size)
				if err != nil {
					return err
				}
				return item(value)
			}
			return r.skip(size)
		})
	})
	if err == nil && !found {
		err = errors.New("no pod list in the answer")
	}
	if err != nil {
		return fmt.Errorf("read a pod list: %w", err)
	}
	return nil
}

// protoReader reads the length-delimited fields of protobuf messages
// from a stream; buf is reused from field to field, and varintBytes
// counts the bytes of the varints read, which fields needs to know where
// a message ends.
type protoReader struct {
	r           *bufio.Reader
	buf         []byte
	varintBytes int
}

// fields calls f with the number and size of each length-delimited
// field of the next size bytes (of the rest of the stream if size < 0);
// f reads or skips the field's value.
func (p *protoReader) fields(size int, f func(num protowire.Number, size int) error) error {
	for size != 0 {
		tag, n, err := p.uvarint()
		if errors.Is(err, io.EOF) && size < 0 && n == 0 {
			return nil
		}
		if err != nil {
			return noEOF(err)
		}
		length, m, err := p.uvarint()
		if err != nil {
			return noEOF(err)
		}
		num, typ := protowire.DecodeTag(tag)
		if typ != protowire.BytesType || length > math.MaxInt32 {
			return fmt.Errorf("unexpected field %d of wire type %d and length %d", num, typ, length)
		}
		if err := f(num, int(length)); err != nil {
			return err
		}
		if size > 0 {
			if size -= n + m + int(length); size < 0 {
				return errors.New("a field runs past its message")
			}
		}
	}
	return nil
}

// uvarint reads a varint and says how many bytes it took.
func (p *protoReader) uvarint() (uint64, int, error) {
	start := p.varintBytes
	v, err := binary.ReadUvarint(p)
	return v, p.varintBytes - start, err
}

// ReadByte is the io.ByteReader of binary.ReadUvarint.
func (p *protoReader) ReadByte() (byte, error) {
	b, err := p.r.ReadByte()
	if err == nil {
		p.varintBytes++
	}
	return b, err
}

// read reads a field's value into buf.
func (p *protoReader) read(size int) ([]byte, error) {
	if size > MaxFrame {
		return nil, fmt.Errorf("a field of %d bytes", size)
	}
	return readInto(p.r, &p.buf, size)
}

// readInto reads size bytes into buf, grown if need be; a stream that
// ends first ends inside what was read.
func readInto(r io.Reader, buf *[]byte, size int) ([]byte, error) {
	if cap(*buf) < size {
		*buf = make([]byte, size)
	}
	value := (*buf)[:size]
	if _, err := io.ReadFull(r, value); err != nil {
		return nil, noEOF(err)
	}
	return value, nil
}

func (p *protoReader) skip(size int) error {
	_, err := p.r.Discard(size)
	return noEOF(err)
}

func (p *protoReader) listMeta(size int, meta func(metav1.ListMeta)) error {
	value, err := p.read(size)
	if err != nil {
		return err
	}
	var m metav1.ListMeta
	if err := m.Unmarshal(value); err != nil {
		return fmt.Errorf("read its metadata: %w", err)
	}
	meta(m)
	return nil
}

// noEOF says that a stream ended inside a field.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Decoder decodes the pods of pages, one page at a time, so one Decoder
// serves one goroutine; scratch holds one pod's metadata while it is
// decoded (decoding copies what it keeps). The zero Decoder makes rows
// of whole pods without managedFields.
type Decoder struct {
	// Lean makes lean rows (see Lean); KeepManagedFields keeps a whole
	// or packed pod's managedFields.
	Lean, KeepManagedFields bool
	// Pack keeps, beside a lean pod, the whole pod's bytes (see Pack).
	Pack bool
	// Skip, when set, hears of each pod whose metadata reads but whose
	// other bytes do not decode (a *PodError); ReadList and Events then
	// leave that pod out and go on with the others. Without Skip such a
	// pod is the error of the whole read.
	Skip    func(*PodError)
	scratch []byte
}

// PodError is a pod, named by its metadata, whose bytes do not decode.
type PodError struct {
	Namespace, Name string
	Err             error
}

func (e *PodError) Error() string {
	return fmt.Sprintf("decode pod %s/%s: %v", e.Namespace, e.Name, e.Err)
}

func (e *PodError) Unwrap() error { return e.Err }

// skipped says whether err is a pod that Skip has heard of and that is
// left out.
func (d *Decoder) skipped(err error) bool {
	var pe *PodError
	if d.Skip == nil || !errors.As(err, &pe) {
		return false
	}
	d.Skip(pe)
	return true
}

// DecodePod decodes one pod's bytes: whole (without managedFields unless
// kept), lean (see Lean), or packed (see Pack).
func (d *Decoder) DecodePod(raw []byte) (PodRow, error) {
	var parts podParts
	if err := eachField(raw, parts.take); err != nil {
		return PodRow{}, fmt.Errorf("read a pod: %w", err)
	}
	if d.Pack {
		return packedRow(parts, d.KeepManagedFields, &d.scratch)
	}
	if d.Lean {
		return leanRow(parts, &d.scratch)
	}
	pod := &corev1.Pod{}
	meta, _, _, err := splitMeta(parts.meta, false, d.KeepManagedFields, &d.scratch)
	if err == nil {
		err = pod.ObjectMeta.Unmarshal(meta)
	}
	if err != nil {
		return PodRow{}, fmt.Errorf("decode a pod: %w", err)
	}
	if err := errors.Join(pod.Spec.Unmarshal(parts.spec), pod.Status.Unmarshal(parts.status)); err != nil {
		return PodRow{}, &PodError{Namespace: pod.Namespace, Name: pod.Name, Err: err}
	}
	return PodRow{whole: pod}, nil
}

// podParts holds the bytes of a pod's three parts.
type podParts struct{ meta, spec, status []byte }

func (p *podParts) take(num protowire.Number, value, _ []byte) error {
	switch num {
	case podMetadata:
		p.meta = value
	case podSpec:
		p.spec = value
	case podStatus:
		p.status = value
	}
	return nil
}

// leanRow is a lean row of a pod's parts: its metadata without
// annotations, finalizers and managedFields (the first two hashed), the
// lean pod's bytes (see appendLean), and each field of the spec and the
// status hashed.
func leanRow(parts podParts, scratch *[]byte) (PodRow, error) {
	meta, annotations, finalizers, err := splitMeta(parts.meta, true, false, scratch)
	if err != nil {
		return PodRow{}, err
	}
	var m metav1.ObjectMeta
	if err := m.Unmarshal(meta); err != nil {
		return PodRow{}, fmt.Errorf("decode a pod's metadata: %w", err)
	}
	// The metadata is decoded, so its bytes in scratch can go.
	lean, err := appendLean((*scratch)[:0], parts)
	if err != nil {
		return PodRow{}, err
	}
	*scratch = lean
	// Pod() decodes these bytes on each read: bytes it could not decode
	// are refused here, once, rather than on a read that cannot fail.
	if err := leanError(lean); err != nil {
		return PodRow{}, &PodError{Namespace: m.Namespace, Name: m.Name, Err: err}
	}
	p := &Parts{Annotations: uint32(annotations), Finalizers: uint32(finalizers),
		Spec: fieldHashes(parts.spec, specFields()), Status: fieldHashes(parts.status, statusFields())}
	slim, sets := slimMeta(&m)
	return PodRow{meta: slim, sets: sets, lean: bytes.Clone(lean), Parts: p}, nil
}

// packedRow is a packed row of a pod's parts: its lean metadata, and its
// bytes, from which Pod() reads the rest of the lean pod when asked. The
// outputs of packed rows print no CHANGES, so no part is hashed, and
// most pods are read once or twice: reading the lean pod on each read
// costs less than keeping it.
func packedRow(parts podParts, keepManagedFields bool, scratch *[]byte) (PodRow, error) {
	meta, _, _, err := splitMeta(parts.meta, true, false, scratch)
	if err != nil {
		return PodRow{}, err
	}
	var m metav1.ObjectMeta
	if err := m.Unmarshal(meta); err != nil {
		return PodRow{}, fmt.Errorf("decode a pod's metadata: %w", err)
	}
	packed, err := packPod(parts, keepManagedFields, scratch)
	if err != nil {
		return PodRow{}, err
	}
	// Pod() reads the lean pod of these bytes on each read: bytes it
	// could not read are refused here, once, rather than on a read that
	// cannot fail. The packed bytes hold the same spec and status.
	lean, err := appendLean((*scratch)[:0], parts)
	if err == nil {
		*scratch = lean
		err = leanError(lean)
	}
	if err != nil {
		return PodRow{}, &PodError{Namespace: m.Namespace, Name: m.Name, Err: err}
	}
	slim, sets := slimMeta(&m)
	return PodRow{meta: slim, sets: sets, Raw: packed}, nil
}

// packedLeanPod is the lean pod of a packed row's bytes, with the row's
// metadata.
func packedLeanPod(meta metav1.ObjectMeta, raw []byte) (*corev1.Pod, error) {
	var parts podParts
	if err := eachField(raw, parts.take); err != nil {
		return nil, fmt.Errorf("read a pod: %w", err)
	}
	lean, err := appendLean(nil, parts)
	if err != nil {
		return nil, err
	}
	pod := &corev1.Pod{}
	if err := pod.Unmarshal(lean); err != nil {
		return nil, fmt.Errorf("decode a lean pod: %w", err)
	}
	pod.ObjectMeta = meta
	return pod, nil
}

// packPod encodes a pod anew from its parts, without managedFields
// unless kept, in a slice of its own: a slice of the page would keep the
// whole page's answer alive as long as any of its pods.
func packPod(parts podParts, keepManagedFields bool, scratch *[]byte) ([]byte, error) {
	meta, _, _, err := splitMeta(parts.meta, false, keepManagedFields, scratch)
	if err != nil {
		return nil, fmt.Errorf("read a pod's metadata: %w", err)
	}
	fields := []struct {
		num   protowire.Number
		value []byte
	}{{podMetadata, meta}, {podSpec, parts.spec}, {podStatus, parts.status}}
	size := 0
	for _, f := range fields {
		size += protowire.SizeTag(f.num) + protowire.SizeBytes(len(f.value))
	}
	out := make([]byte, 0, size)
	for _, f := range fields {
		out = protowire.AppendTag(out, f.num, protowire.BytesType)
		out = protowire.AppendBytes(out, f.value)
	}
	return out, nil
}

// splitMeta returns the metadata's bytes without managedFields (unless
// kept) and, for a lean pod, without annotations and finalizers, with
// hashes of those two. The bytes returned are in scratch.
func splitMeta(meta []byte, lean, keepManagedFields bool, scratch *[]byte) ([]byte, uint64, uint64, error) {
	kept := (*scratch)[:0]
	defer func() { *scratch = kept }()
	var annotations, finalizers uint64
	err := eachField(meta, func(num protowire.Number, value, whole []byte) error {
		switch {
		case lean && num == metaAnnotations:
			annotations = fold(annotations, whole)
		case lean && num == metaFinalizers:
			finalizers = fold(finalizers, whole)
		case num == metaManaged:
			if keepManagedFields {
				kept = append(kept, whole...)
			}
		default:
			kept = append(kept, whole...)
		}
		return nil
	})
	return kept, annotations, finalizers, err
}

// fieldHashes hashes each set field of a message's bytes, by the Go struct
// index that fields maps the field number to; a repeated field's entries
// are folded in order.
func fieldHashes(msg []byte, fields []uint8) []PartHash {
	var buf [64]PartHash
	out := buf[:0]
	_ = eachField(msg, func(num protowire.Number, _, whole []byte) error {
		var i uint8
		if int(num) < len(fields) {
			i = fields[num]
		}
		if n := len(out); n > 0 && out[n-1].Field == i {
			out[n-1].Hash = uint32(fold(uint64(out[n-1].Hash), whole))
			return nil
		}
		out = append(out, PartHash{Field: i, Hash: uint32(fold(0, whole))})
		return nil
	})
	// The encoding writes fields by number, not by their order in Go.
	sortParts(out)
	return slices.Clone(out)
}

// fold adds the hash of b to h. Hashes are compared only within one run,
// so the seed is the run's own; maphash reads a field of a pod many times
// faster than FNV's byte at a time did.
func fold(h uint64, b []byte) uint64 {
	const prime = 1099511628211
	return h*prime ^ maphash.Bytes(hashSeed, b)
}

var hashSeed = maphash.MakeSeed()

// eachField calls f with each field of a message: its number, its value
// (the bytes of a length-delimited field) and the whole field's bytes.
func eachField(msg []byte, f func(num protowire.Number, value, whole []byte) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return protowire.ParseError(n)
		}
		var value []byte
		var m int
		if typ == protowire.BytesType {
			value, m = protowire.ConsumeBytes(msg[n:])
		} else {
			m = protowire.ConsumeFieldValue(num, typ, msg[n:])
			if m >= 0 {
				value = msg[n : n+m]
			}
		}
		if m < 0 {
			return protowire.ParseError(m)
		}
		if err := f(num, value, msg[:n+m]); err != nil {
			return err
		}
		msg = msg[n+m:]
	}
	return nil
}

// field returns the value of the first field num of msg.
func field(msg []byte, num protowire.Number) ([]byte, error) {
	var out []byte
	found := false
	err := eachField(msg, func(n protowire.Number, value, _ []byte) error {
		if n == num && !found {
			out, found = value, true
		}
		return nil
	})
	if err == nil && !found {
		err = fmt.Errorf("no field %d", num)
	}
	return out, err
}

// structFields maps the protobuf field numbers of a generated struct, as
// indexes, to the index of each field in the Go struct.
func structFields(t reflect.Type) []uint8 {
	var out []uint8
	for i := range t.NumField() {
		num, err := protoNum(t.Field(i).Tag.Get("protobuf"))
		if err != nil || num <= 0 {
			continue
		}
		if int(num) >= len(out) {
			out = append(out, make([]uint8, int(num)+1-len(out))...)
		}
		out[num] = uint8(i)
	}
	return out
}

// protoNumber is the number in a tag like "bytes,2,rep,name=containers".
func protoNumber(tag string) string {
	_, rest, _ := bytes.Cut([]byte(tag), []byte(","))
	number, _, _ := bytes.Cut(rest, []byte(","))
	return string(number)
}

var (
	specFields   = sync.OnceValue(func() []uint8 { return structFields(reflect.TypeFor[corev1.PodSpec]()) })
	statusFields = sync.OnceValue(func() []uint8 { return structFields(reflect.TypeFor[corev1.PodStatus]()) })
)
