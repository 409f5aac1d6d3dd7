package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A packed row's JSON is written straight from its protobuf bytes, byte
// for byte as encoding/json writes the decoded pod: decoding the pod into
// Go structs and encoding it again by reflection was most of the CPU of
// `-o json`. A plan per Go type, read once from its struct tags, says in
// which order the protobuf fields go into the JSON and what an absent one
// prints. Types with JSON methods of their own (times, quantities,
// int-or-strings, raw objects) are decoded and marshalled by their own
// methods, so their JSON is theirs by construction. Anything the plan
// cannot write exactly (a singular field given twice, a wire type that
// does not match, a map key given twice) makes the caller decode the pod
// as before.

// PodJSON writes packed rows as JSON; its buffers are reused, so one
// PodJSON serves one goroutine.
type PodJSON struct {
	entries []protoEntry
	keys    []mapEntry
	// slots holds, per field of each message being written, where its
	// entries are.
	slots []slot
}

// slot is where one field's entries are among a message's entries.
type slot struct{ first, count int32 }

// protoEntry is one field of a message being written.
type protoEntry struct {
	num  protowire.Number
	wire protowire.Type
	val  []byte // a length-delimited field's bytes
	n    uint64 // a varint's value
}

// mapEntry is one key and value of a map being written.
type mapEntry struct {
	key, val []byte
	hasVal   bool
}

// errNoPlan makes the caller fall back to decoding the pod.
var errNoPlan = errors.New("no exact JSON for these bytes")

// Append appends the JSON of row's whole pod, with apiVersion and kind, to
// dst. It reports false, with dst as it was, when the row is not packed
// or its bytes hold something the plan does not write exactly; the caller
// then marshals the decoded pod.
func (j *PodJSON) Append(dst []byte, row *PodRow) ([]byte, bool) {
	plan, err := podPlan()
	if err != nil || row.Raw == nil {
		return dst, false
	}
	start := len(dst)
	j.entries, j.keys, j.slots = j.entries[:0], j.keys[:0], j.slots[:0]
	dst = append(dst, `{"kind":"Pod","apiVersion":"v1"`...)
	first := false
	if dst, err = j.object(dst, row.Raw, plan, &first); err != nil {
		return dst[:start], false
	}
	return append(dst, '}'), true
}

// jsonKind is how a Go type is written.
type jsonKind uint8

const (
	jsonString jsonKind = iota
	jsonBool
	jsonInt32
	jsonInt64
	jsonUint32
	jsonUint64
	jsonBytes
	jsonStruct
	jsonSlice
	jsonMap
	jsonOwn // a type with a MarshalJSON of its own
)

// jsonType is the plan of one Go type.
type jsonType struct {
	kind   jsonKind
	typ    reflect.Type
	fields []jsonField // of a struct, in Go order
	// index maps a struct's protobuf field numbers to its fields.
	index []int16
	elem  *jsonType // of a slice, or a map's values
	zero  []byte    // the JSON of the type's zero value
	// own writes a value of a type with JSON of its own whose
	// MarshalJSON is known to write valid, compact JSON; nil for others.
	own func(dst, msg []byte) ([]byte, error)
	// isZero, for such a type, tells omitzero's answer without
	// reflection; nil for others.
	isZero func(msg []byte) (bool, error)
}

// jsonField is one field of a struct's plan.
type jsonField struct {
	key     string // `"name":`
	num     protowire.Number
	wire    protowire.Type
	pointer bool
	// omitEmpty and omitZero are the json tag's options, applied to a
	// field that is present.
	omitEmpty, omitZero bool
	// inline: an embedded struct, whose fields are the object's own.
	inline bool
	typ    *jsonType
	// absent is what a field missing from the bytes prints; nil when
	// it is left out.
	absent []byte
}

var podPlan = sync.OnceValues(func() (*jsonType, error) {
	return planJSON(reflect.TypeFor[corev1.Pod](), map[reflect.Type]*jsonType{})
})

var (
	marshalerType   = reflect.TypeFor[json.Marshaler]()
	unmarshalerType = reflect.TypeFor[interface{ Unmarshal([]byte) error }]()
	textType        = reflect.TypeFor[interface{ MarshalText() ([]byte, error) }]()
)

// planJSON reads the plan of t; seen holds the plans read so far.
func planJSON(t reflect.Type, seen map[reflect.Type]*jsonType) (*jsonType, error) {
	if p, ok := seen[t]; ok {
		return p, nil
	}
	p := &jsonType{typ: t}
	seen[t] = p
	zero, err := json.Marshal(reflect.New(t).Interface())
	if err != nil {
		return nil, fmt.Errorf("marshal a zero %s: %w", t, err)
	}
	p.zero = zero
	if reflect.PointerTo(t).Implements(marshalerType) {
		// omitempty never leaves a struct out; for other kinds it would
		// need the decoded value.
		if !reflect.PointerTo(t).Implements(unmarshalerType) || t.Kind() != reflect.Struct {
			return nil, fmt.Errorf("%s has its own JSON but no protobuf decoding, or is no struct", t)
		}
		p.kind = jsonOwn
		p.own, p.isZero = trustedJSON[t], trustedZero[t]
		return p, nil
	}
	if reflect.PointerTo(t).Implements(textType) {
		return nil, fmt.Errorf("%s marshals as text", t)
	}
	if kind, ok := scalarKinds[t.Kind()]; ok {
		p.kind = kind
		return p, nil
	}
	switch t.Kind() {
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			p.kind = jsonBytes
			return p, nil
		}
		p.kind = jsonSlice
		p.elem, err = planElem(t.Elem(), seen)
	case reflect.Map:
		if t.Key().Kind() != reflect.String || reflect.PointerTo(t.Key()).Implements(textType) {
			return nil, fmt.Errorf("a map keyed by %s", t.Key())
		}
		p.kind = jsonMap
		p.elem, err = planElem(t.Elem(), seen)
		if err == nil && p.elem.kind == jsonOwn && !t.Elem().Implements(marshalerType) {
			err = fmt.Errorf("map values of %s marshal only by pointer", t.Elem())
		}
	case reflect.Struct:
		p.kind = jsonStruct
		if p.fields, err = planFields(t, seen); err == nil {
			p.index = fieldIndex(p.fields)
		}
	default:
		err = fmt.Errorf("a field of kind %s", t.Kind())
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t, err)
	}
	return p, nil
}

// scalarKinds are the Go kinds written as JSON strings, booleans and
// numbers.
var scalarKinds = map[reflect.Kind]jsonKind{
	reflect.String: jsonString, reflect.Bool: jsonBool,
	reflect.Int32: jsonInt32, reflect.Int64: jsonInt64,
	reflect.Uint32: jsonUint32, reflect.Uint64: jsonUint64,
}

// planElem is the plan of a slice's elements or a map's values, which
// may not be pointers, slices or maps.
func planElem(t reflect.Type, seen map[reflect.Type]*jsonType) (*jsonType, error) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Interface:
		return nil, fmt.Errorf("elements of kind %s", t.Kind())
	case reflect.Slice:
		if t.Elem().Kind() != reflect.Uint8 {
			return nil, fmt.Errorf("elements of kind %s", t.Kind())
		}
	}
	return planJSON(t, seen)
}

// planFields reads a struct's fields as encoding/json sees them.
func planFields(t reflect.Type, seen map[reflect.Type]*jsonType) ([]jsonField, error) {
	var fields []jsonField
	names := map[string]bool{}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" || (!sf.IsExported() && !sf.Anonymous) {
			continue
		}
		f, err := planField(sf, tag, seen)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", sf.Name, err)
		}
		for _, name := range jsonNames(f) {
			if names[name] {
				return nil, fmt.Errorf("two fields named %s", name)
			}
			names[name] = true
		}
		fields = append(fields, f)
	}
	return fields, nil
}

// fieldIndex maps protobuf field numbers to the fields that hold them
// (-1: none).
func fieldIndex(fields []jsonField) []int16 {
	var index []int16
	for i, f := range fields {
		if f.num == 0 {
			continue
		}
		for int(f.num) >= len(index) {
			index = append(index, -1)
		}
		index[f.num] = int16(i)
	}
	return index
}

// jsonNames are the keys a field writes: its own, or an inline struct's.
func jsonNames(f jsonField) []string {
	if !f.inline {
		return []string{f.key}
	}
	var out []string
	for _, g := range f.typ.fields {
		out = append(out, jsonNames(g)...)
	}
	return out
}

func planField(sf reflect.StructField, tag string, seen map[reflect.Type]*jsonType) (jsonField, error) {
	name, opts, _ := strings.Cut(tag, ",")
	var f jsonField
	for _, o := range strings.Split(opts, ",") {
		switch o {
		case "omitempty":
			f.omitEmpty = true
		case "omitzero":
			f.omitZero = true
		case "string":
			return f, errors.New("the string option")
		}
	}
	ft := sf.Type
	if ft.Kind() == reflect.Pointer {
		f.pointer, ft = true, ft.Elem()
	}
	if sf.Anonymous && name == "" {
		if f.pointer || ft.Kind() != reflect.Struct {
			return f, errors.New("an embedded field that is not a struct")
		}
		f.inline = true
	}
	if name == "" {
		name = sf.Name
	}
	key, err := json.Marshal(name)
	if err != nil {
		return f, fmt.Errorf("marshal the name: %w", err)
	}
	f.key = string(key) + ":"
	if f.num, err = protoNum(sf.Tag.Get("protobuf")); err != nil {
		return f, err
	}
	if f.typ, err = planJSON(ft, seen); err != nil {
		return f, err
	}
	f.wire = wireOf(f.typ.kind)
	if f.typ.kind == jsonSlice {
		f.wire = wireOf(f.typ.elem.kind)
	}
	if f.omitZero && f.typ.kind != jsonOwn {
		return f, errors.New("omitzero on a type without JSON of its own")
	}
	f.absent, err = absentJSON(sf.Type, f)
	return f, err
}

// protoNum reads the number of a tag like "bytes,2,rep,name=containers";
// 0 for a field not in the bytes. The tag's wire type is not read: some
// tags say bytes for an integer the generated code writes as a varint.
func protoNum(tag string) (protowire.Number, error) {
	if tag == "" {
		return 0, nil
	}
	num, err := strconv.Atoi(protoNumber(tag))
	if err != nil {
		return 0, fmt.Errorf("protobuf tag %q: %w", tag, err)
	}
	return protowire.Number(num), nil
}

// wireOf is the wire type the generated code writes a value of kind in.
func wireOf(kind jsonKind) protowire.Type {
	switch kind {
	case jsonBool, jsonInt32, jsonInt64, jsonUint32, jsonUint64:
		return protowire.VarintType
	}
	return protowire.BytesType
}

// absentJSON is what a field missing from the bytes prints: its Go zero
// value, or nothing when the tag leaves that out.
func absentJSON(t reflect.Type, f jsonField) ([]byte, error) {
	if f.inline || f.omitZero {
		return nil, nil
	}
	if f.omitEmpty && (f.pointer || f.typ.kind != jsonStruct && f.typ.kind != jsonOwn) {
		return nil, nil
	}
	return json.Marshal(reflect.New(t).Interface())
}

// object writes the fields of msg, a message of struct plan t, after an
// opening brace the caller wrote; first tells whether a field was
// written before.
func (j *PodJSON) object(dst, msg []byte, t *jsonType, first *bool) ([]byte, error) {
	base, at := len(j.entries), len(j.slots)
	defer func() { j.entries, j.slots = j.entries[:base], j.slots[:at] }()
	if err := j.collect(msg); err != nil {
		return dst, err
	}
	j.slots = slices.Grow(j.slots, len(t.fields))[:at+len(t.fields)]
	clear(j.slots[at:])
	for i := base; i < len(j.entries); i++ {
		num := j.entries[i].num
		if int(num) >= len(t.index) || t.index[num] < 0 {
			continue // unknown to this version of the types, as decoding skips it
		}
		sl := &j.slots[at+int(t.index[num])]
		if sl.count == 0 {
			sl.first = int32(i)
		}
		sl.count++
	}
	var err error
	for i := range t.fields {
		if dst, err = j.field(dst, &t.fields[i], j.slots[at+i], first); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// collect appends the fields of msg to j.entries.
func (j *PodJSON) collect(msg []byte) error {
	for len(msg) > 0 {
		num, wire, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return protowire.ParseError(n)
		}
		msg = msg[n:]
		e := protoEntry{num: num, wire: wire}
		switch wire {
		case protowire.BytesType:
			e.val, n = protowire.ConsumeBytes(msg)
		case protowire.VarintType:
			e.n, n = protowire.ConsumeVarint(msg)
		default:
			n = protowire.ConsumeFieldValue(num, wire, msg)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		msg = msg[n:]
		j.entries = append(j.entries, e)
	}
	return nil
}

// field writes one field of a message, whose entries are at sl.
func (j *PodJSON) field(dst []byte, f *jsonField, sl slot, first *bool) ([]byte, error) {
	if sl.count == 0 {
		if f.inline {
			return j.object(dst, nil, f.typ, first)
		}
		if f.absent != nil {
			dst = append(appendKey(dst, f.key, first), f.absent...)
		}
		return dst, nil
	}
	if f.typ.kind == jsonSlice || f.typ.kind == jsonMap {
		return j.repeated(dst, f, sl, first)
	}
	e := j.entries[sl.first]
	if sl.count > 1 || e.wire != f.wire {
		return dst, errNoPlan
	}
	if f.inline {
		return j.object(dst, e.val, f.typ, first)
	}
	if !f.pointer && f.omitEmpty && emptyScalar(f.typ.kind, e) {
		return dst, nil
	}
	if f.omitZero && f.typ.kind == jsonOwn {
		zero, err := ownIsZero(f.typ, e.val)
		if err != nil || zero {
			return dst, err
		}
	}
	return j.value(appendKey(dst, f.key, first), f.typ, e)
}

// emptyScalar tells whether a present scalar is its type's empty value,
// which omitempty leaves out.
func emptyScalar(kind jsonKind, e protoEntry) bool {
	switch kind {
	case jsonString, jsonBytes:
		return len(e.val) == 0
	case jsonBool:
		return e.n == 0
	case jsonInt32:
		return int32(e.n) == 0
	case jsonUint32:
		return uint32(e.n) == 0
	case jsonInt64, jsonUint64:
		return e.n == 0
	}
	return false
}

// repeated writes a slice or a map from all of f's entries, at sl.
func (j *PodJSON) repeated(dst []byte, f *jsonField, sl slot, first *bool) ([]byte, error) {
	dst = appendKey(dst, f.key, first)
	if f.typ.kind == jsonMap {
		return j.mapValue(dst, f, sl)
	}
	dst = append(dst, '[')
	n := 0
	var err error
	for i, left := int(sl.first), sl.count; left > 0; i++ {
		e := j.entries[i]
		if e.num != f.num {
			continue
		}
		left--
		switch {
		case e.wire == protowire.BytesType && f.wire == protowire.VarintType:
			dst, n, err = packedVarints(dst, f.typ.elem, e.val, n)
		case e.wire != f.wire:
			err = errNoPlan
		default:
			dst, err = j.value(appendComma(dst, n), f.typ.elem, e)
			n++
		}
		if err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// packedVarints writes the varints of a packed field as elements n on.
func packedVarints(dst []byte, t *jsonType, packed []byte, n int) ([]byte, int, error) {
	for len(packed) > 0 {
		v, m := protowire.ConsumeVarint(packed)
		if m < 0 {
			return dst, n, protowire.ParseError(m)
		}
		packed = packed[m:]
		var err error
		if dst, err = appendScalar(appendComma(dst, n), t.kind, protoEntry{n: v}); err != nil {
			return dst, n, err
		}
		n++
	}
	return dst, n, nil
}

// mapValue writes a map's entries, sorted by key as encoding/json sorts
// them; a key given twice falls back to decoding.
func (j *PodJSON) mapValue(dst []byte, f *jsonField, sl slot) ([]byte, error) {
	start := len(j.keys)
	defer func() { j.keys = j.keys[:start] }()
	for i, left := int(sl.first), sl.count; left > 0; i++ {
		e := j.entries[i]
		if e.num != f.num {
			continue
		}
		left--
		if e.wire != protowire.BytesType {
			return dst, errNoPlan
		}
		entry, err := readMapEntry(e.val)
		if err != nil {
			return dst, err
		}
		j.keys = append(j.keys, entry)
	}
	keys := j.keys[start:]
	slices.SortFunc(keys, func(a, b mapEntry) int { return bytes.Compare(a.key, b.key) })
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 && bytes.Equal(k.key, keys[i-1].key) {
			return dst, errNoPlan
		}
		dst = append(appendJSONString(appendComma(dst, i), k.key), ':')
		if !k.hasVal {
			dst = append(dst, f.typ.elem.zero...)
			continue
		}
		var err error
		if dst, err = j.value(dst, f.typ.elem, protoEntry{wire: protowire.BytesType, val: k.val}); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// readMapEntry reads a map entry's message: key 1, value 2.
func readMapEntry(msg []byte) (mapEntry, error) {
	var out mapEntry
	err := eachField(msg, func(num protowire.Number, value, whole []byte) error {
		if whole[0]&7 != byte(protowire.BytesType) {
			return errNoPlan
		}
		switch num {
		case 1:
			out.key = value
		case 2:
			out.val, out.hasVal = value, true
		}
		return nil
	})
	return out, err
}

// value writes one present value of plan t.
func (j *PodJSON) value(dst []byte, t *jsonType, e protoEntry) ([]byte, error) {
	switch t.kind {
	case jsonStruct:
		first := true
		out, err := j.object(append(dst, '{'), e.val, t, &first)
		return append(out, '}'), err
	case jsonOwn:
		return appendOwn(dst, t, e.val)
	case jsonSlice, jsonMap:
		return dst, errNoPlan
	}
	return appendScalar(dst, t.kind, e)
}

// appendScalar writes a string, number, boolean or bytes value.
func appendScalar(dst []byte, kind jsonKind, e protoEntry) ([]byte, error) {
	switch kind {
	case jsonString:
		return appendJSONString(dst, e.val), nil
	case jsonBytes:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, e.val)
		return append(dst, '"'), nil
	case jsonBool:
		return strconv.AppendBool(dst, e.n != 0), nil
	case jsonInt32:
		return strconv.AppendInt(dst, int64(int32(e.n)), 10), nil
	case jsonInt64:
		return strconv.AppendInt(dst, int64(e.n), 10), nil
	case jsonUint32:
		return strconv.AppendUint(dst, uint64(uint32(e.n)), 10), nil
	case jsonUint64:
		return strconv.AppendUint(dst, e.n, 10), nil
	}
	return dst, errNoPlan
}

// trustedJSON writes the types with JSON of their own that every pod
// holds, whose MarshalJSON writes valid JSON that needs no escaping
// (times and quantities print only digits, letters and signs; an
// int-or-string's string is marshalled by encoding/json), without
// reflection or validation.
var trustedJSON = map[reflect.Type]func(dst, msg []byte) ([]byte, error){
	reflect.TypeFor[metav1.Time]():        appendTime,
	reflect.TypeFor[metav1.MicroTime]():   ownJSON[metav1.MicroTime],
	reflect.TypeFor[resource.Quantity]():  ownJSON[resource.Quantity],
	reflect.TypeFor[intstr.IntOrString](): ownJSON[intstr.IntOrString],
}

// trustedZero tells omitzero's answer for the one type a pod holds with
// omitzero (its creationTimestamp).
var trustedZero = map[reflect.Type]func(msg []byte) (bool, error){
	reflect.TypeFor[metav1.Time](): timeIsZero,
}

// appendTime writes a metav1.Time as its MarshalJSON does, without the
// buffer that allocates: null for the zero time, else the whole seconds in
// UTC as RFC 3339.
func appendTime(dst, msg []byte) ([]byte, error) {
	t, err := decodeTime(msg)
	if err != nil {
		return dst, err
	}
	if t.IsZero() {
		return append(dst, "null"...), nil
	}
	dst = append(dst, '"')
	dst = t.UTC().AppendFormat(dst, time.RFC3339)
	return append(dst, '"'), nil
}

func timeIsZero(msg []byte) (bool, error) {
	t, err := decodeTime(msg)
	return t.IsZero(), err
}

func decodeTime(msg []byte) (metav1.Time, error) {
	var t metav1.Time
	if err := t.Unmarshal(msg); err != nil {
		return t, fmt.Errorf("decode a time: %w", err)
	}
	return t, nil
}

// ownJSON decodes a T and appends what its MarshalJSON writes.
func ownJSON[T any, P interface {
	*T
	Unmarshal([]byte) error
	json.Marshaler
}](dst, msg []byte) ([]byte, error) {
	var v T
	if err := P(&v).Unmarshal(msg); err != nil {
		return dst, fmt.Errorf("decode a %T: %w", v, err)
	}
	out, err := P(&v).MarshalJSON()
	if err != nil {
		return dst, fmt.Errorf("marshal a %T: %w", v, err)
	}
	return append(dst, out...), nil
}

// decodeOwn decodes a value of a type with JSON of its own.
func decodeOwn(t *jsonType, msg []byte) (reflect.Value, error) {
	v := reflect.New(t.typ)
	if err := v.Interface().(interface{ Unmarshal([]byte) error }).Unmarshal(msg); err != nil {
		return v, fmt.Errorf("decode a %s: %w", t.typ, err)
	}
	return v, nil
}

// ownIsZero tells whether omitzero leaves a value out, as encoding/json
// decides it: by the type's IsZero, else by its Go zero value.
func ownIsZero(t *jsonType, msg []byte) (bool, error) {
	if t.isZero != nil {
		return t.isZero(msg)
	}
	v, err := decodeOwn(t, msg)
	if err != nil {
		return false, err
	}
	if z, ok := v.Interface().(interface{ IsZero() bool }); ok {
		return z.IsZero(), nil
	}
	return v.Elem().IsZero(), nil
}

// appendOwn writes a value through its own MarshalJSON: the trusted
// types' directly, any other's (managedFields' FieldsV1, raw objects)
// through encoding/json, which compacts and HTML-escapes what a
// MarshalJSON returns.
func appendOwn(dst []byte, t *jsonType, msg []byte) ([]byte, error) {
	if t.own != nil {
		return t.own(dst, msg)
	}
	v, err := decodeOwn(t, msg)
	if err != nil {
		return dst, err
	}
	out, err := json.Marshal(v.Interface())
	if err != nil {
		return dst, fmt.Errorf("marshal a %s: %w", t.typ, err)
	}
	return append(dst, out...), nil
}

// appendJSONString writes s quoted as encoding/json quotes it: printable
// ASCII that needs no escape as it is, anything else through
// encoding/json.
func appendJSONString(dst, s []byte) []byte {
	for _, c := range s {
		if c < ' ' || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			quoted, _ := json.Marshal(string(s)) // a string always marshals
			return append(dst, quoted...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

func appendKey(dst []byte, key string, first *bool) []byte {
	if !*first {
		dst = append(dst, ',')
	}
	*first = false
	return append(dst, key...)
}

func appendComma(dst []byte, n int) []byte {
	if n > 0 {
		return append(dst, ',')
	}
	return dst
}
