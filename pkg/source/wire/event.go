package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// A watch of plain pods is read from its protobuf frames here, as a list
// is (see proto.go): each event's pod goes straight from its bytes to the
// row the informer keeps, rather than being decoded whole by the client
// and, for a packed row, encoded again to be packed. Under churn that was
// most of the work an update cost.

// MaxFrame bounds one event: a pod is at most a few MiB (etcd's limit is
// 1.5 MiB per object), so a bigger length is a broken stream.
const MaxFrame = 16 << 20

// Field numbers of the messages read here (see their protobuf tags).
const (
	eventType      = 1 // metav1.WatchEvent.Type
	eventObject    = 2 // metav1.WatchEvent.Object
	extensionRaw   = 1 // runtime.RawExtension.Raw
	unknownType    = 1 // runtime.Unknown.TypeMeta
	typeMetaKind   = 2 // runtime.TypeMeta.Kind
	statusKindName = "Status"
)

// Events reads a watch's events from its body: one per length-delimited
// protobuf frame, or, from a watch that is not protobuf, one per event of
// client-go's decoding. Its reader closes the body.
type Events struct {
	in *bufio.Reader
	// sniffed says that the body's encoding is known: protobuf, or
	// another one that std reads.
	sniffed bool
	std     *restclientwatch.Decoder
	body    io.ReadCloser
	d       *Decoder
	head    [4]byte
	buf     []byte // reused: what DecodePod keeps, it copies
}

// NewEvents reads the events of body, each pod made a row by d.
func NewEvents(body io.ReadCloser, d *Decoder) *Events {
	return &Events{body: body, d: d}
}

// Next reads the next event: a pod row, or the Status of an ERROR. A pod
// that does not decode is left out when the Decoder's Skip is set (see
// Decoder): Next goes on with the next event.
func (e *Events) Next() (watch.EventType, runtime.Object, error) {
	for {
		typ, obj, err := e.next()
		if err == nil || !e.d.skipped(err) {
			return typ, obj, err
		}
	}
}

func (e *Events) next() (watch.EventType, runtime.Object, error) {
	if !e.sniffed {
		if err := e.sniff(); err != nil {
			return "", nil, err
		}
	}
	if e.std != nil {
		typ, obj, err := e.std.Decode()
		if err != nil {
			return "", nil, err
		}
		return standardEvent(typ, obj, e.d)
	}
	if _, err := io.ReadFull(e.in, e.head[:]); err != nil {
		return "", nil, err
	}
	n := binary.BigEndian.Uint32(e.head[:])
	if n > MaxFrame {
		return "", nil, fmt.Errorf("a watch event of %d bytes", n)
	}
	frame, err := readInto(e.in, &e.buf, int(n))
	if err != nil {
		return "", nil, err
	}
	return decodeEvent(frame, e.d)
}

// sniff tells the body's encoding by its first bytes: a protobuf frame
// starts with its length, whose first byte is 0 or 1 (see MaxFrame); any
// other encoding is left to client-go's decoding.
func (e *Events) sniff() error {
	if e.in == nil {
		e.in = bufio.NewReaderSize(e.body, answerBuffer)
	}
	peek, err := e.in.Peek(len(e.head))
	if len(peek) == 0 && err != nil {
		return err
	}
	e.sniffed = true
	var mediaType string
	switch {
	case peek[0] <= MaxFrame>>24 && fast():
		return nil
	case peek[0] <= MaxFrame>>24:
		// Frames carry no magic of their own to recognize.
		mediaType, err = runtime.ContentTypeProtobuf, nil
		readingProtobufSlowly()
	default:
		mediaType, err = standardMediaType(peek, true)
	}
	if err == nil {
		e.std, err = standardEvents(e.in, e.body, mediaType)
	}
	return err
}

// decodeEvent reads one WatchEvent: a pod row, or the Status of an ERROR.
func decodeEvent(frame []byte, d *Decoder) (watch.EventType, runtime.Object, error) {
	var typ string
	var object []byte
	err := eachField(frame, func(num protowire.Number, value, _ []byte) error {
		switch num {
		case eventType:
			typ = string(value)
		case eventObject:
			object = value
		}
		return nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("read a watch event: %w", err)
	}
	raw, err := field(object, extensionRaw)
	if err != nil {
		return "", nil, fmt.Errorf("read a watch event's object: %w", err)
	}
	kind, inner, err := unknown(raw)
	if err != nil {
		return "", nil, fmt.Errorf("read a watch event's object: %w", err)
	}
	if kind == statusKindName {
		status := &metav1.Status{}
		if err := status.Unmarshal(inner); err != nil {
			return "", nil, fmt.Errorf("decode a watch error: %w", err)
		}
		return watch.EventType(typ), status, nil
	}
	if watch.EventType(typ) == watch.Bookmark {
		// A bookmark's annotations say whether it ends a streaming
		// list, and a lean row would drop them.
		d = &Decoder{}
	}
	row, err := d.DecodePod(inner)
	if err != nil {
		return "", nil, err
	}
	return watch.EventType(typ), &row, nil
}

// unknown opens the envelope of one protobuf object: its kind and bytes.
func unknown(raw []byte) (string, []byte, error) {
	if !bytes.HasPrefix(raw, protobufMagic) {
		return "", nil, errors.New("the object is not protobuf")
	}
	var kind string
	var inner []byte
	err := eachField(raw[len(protobufMagic):], func(num protowire.Number, value, _ []byte) error {
		switch num {
		case unknownType:
			k, err := field(value, typeMetaKind)
			if err == nil {
				kind = string(k)
			}
		case unknownRaw:
			inner = value
		}
		return nil
	})
	return kind, inner, err
}
