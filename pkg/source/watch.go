package source

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// A watch of plain pods is read from its protobuf frames here, as a list
// is (see proto.go): each event's pod goes straight from its bytes to the
// row the informer keeps, rather than being decoded whole by the client
// and, for a packed row, encoded again to be packed. Under churn that was
// most of the work an update cost.

// maxFrame bounds one event: a pod is at most a few MiB (etcd's limit is
// 1.5 MiB per object), so a bigger length is a broken stream.
const maxFrame = 16 << 20

// Field numbers of the messages read here (see their protobuf tags).
const (
	eventType      = 1 // metav1.WatchEvent.Type
	eventObject    = 2 // metav1.WatchEvent.Object
	extensionRaw   = 1 // runtime.RawExtension.Raw
	unknownType    = 1 // runtime.Unknown.TypeMeta
	typeMetaKind   = 2 // runtime.TypeMeta.Kind
	statusKindName = "Status"
)

// rawWatch watches pods with c, a REST client without a client timeout,
// and reads each event's pod with d. listed, if not nil, hears once how a
// streaming list ended: nil with the bookmark that says its pods are all
// in, else what broke it first.
func rawWatch(ctx context.Context, c rest.Interface, namespace string, opts metav1.ListOptions, d decoder, listed func(error)) (watch.Interface, error) {
	opts.Watch = true
	body, err := podsRequest(c, namespace, opts).SetHeader("Accept", watchAccept).Stream(ctx)
	if err != nil {
		return nil, err
	}
	f := &frames{body: body, d: d, initial: initialPagesFor(ctx, opts), listed: listed}
	if streamsInitialEvents(opts) && !listOnly(ctx) {
		f.plain = func(rv string) (io.ReadCloser, error) { return plainWatch(ctx, c, namespace, opts, rv) }
	}
	return watch.NewStreamWatcher(f, apierrors.NewClientErrorReporter(http.StatusInternalServerError, "WATCH", "ClientWatchDecoding")), nil
}

// plainWatch watches the pods' changes after rv, uncompressed. Since
// Kubernetes 1.37 a server compresses a streaming list for a client that
// accepts gzip, and goes on compressing its watch one event at a time:
// each small event then costs both sides a gzip stream of its own, for
// little gain. A plain watch, like `kubectl get -w`'s, is never compressed.
func plainWatch(ctx context.Context, c rest.Interface, namespace string, opts metav1.ListOptions, rv string) (io.ReadCloser, error) {
	opts.SendInitialEvents, opts.ResourceVersionMatch, opts.ResourceVersion = nil, "", rv
	return podsRequest(c, namespace, opts).SetHeader("Accept", watchAccept).SetHeader("Accept-Encoding", "identity").Stream(ctx)
}

// frames reads one watch event per length-delimited frame, or, from a
// watch that is not protobuf, per event of client-go's decoding.
type frames struct {
	body io.ReadCloser
	in   *bufio.Reader // reads body; made by sniff
	// sniffed says that the body's encoding is known: protobuf, or
	// another one that std reads.
	sniffed bool
	std     *restclientwatch.Decoder
	d       decoder
	head    [4]byte
	buf     []byte // reused: what decodePod keeps, it copies
	// initial, while a streaming list sends the current pods, gathers
	// them into pages for the observer of the watch's context.
	initial *initialPages
	// plain, on a streaming list, opens the plain watch that follows
	// it (see plainWatch) from the resourceVersion of its last bookmark,
	// held in from until the bookmark has been decoded.
	plain func(rv string) (io.ReadCloser, error)
	from  string
	// listed, on a streaming list whose outcome is not told yet, is told
	// it (see rawWatch).
	listed func(error)
	// mu guards body, which Close closes from another goroutine, against
	// being replaced meanwhile.
	mu     sync.Mutex
	closed bool
}

// Decode implements watch.Decoder.
func (f *frames) Decode() (watch.EventType, runtime.Object, error) {
	if f.from != "" {
		if err := f.reopen(); err != nil {
			return "", nil, err
		}
	}
	typ, obj, err := f.next()
	if f.listed != nil {
		f.tellListed(typ, obj, err)
	}
	if err == nil && f.initial != nil && f.initial.see(typ, obj) {
		f.initial = nil
	}
	if err == nil && f.plain != nil && endsInitialEvents(typ, obj) {
		f.from = obj.(*PodRow).Meta().ResourceVersion
	}
	return typ, obj, err
}

// tellListed tells a streaming list's outcome once it is known: its
// pods all in, an ERROR event, or a stream that broke, unless it was
// closed by its reader.
func (f *frames) tellListed(typ watch.EventType, obj runtime.Object, err error) {
	switch {
	case err != nil:
		f.mu.Lock()
		closed := f.closed
		f.mu.Unlock()
		if closed {
			return
		}
		if errors.Is(err, io.EOF) {
			err = errors.New("the streamed list ended before its last pod")
		}
		f.listed(fmt.Errorf("list pods: %w", err))
	case typ == watch.Error:
		f.listed(apierrors.FromObject(obj))
	case endsInitialEvents(typ, obj):
		f.listed(nil)
	default:
		return
	}
	f.listed = nil
}

// next reads the next event.
func (f *frames) next() (watch.EventType, runtime.Object, error) {
	if !f.sniffed {
		if err := f.sniff(); err != nil {
			return "", nil, err
		}
	}
	if f.std != nil {
		typ, obj, err := f.std.Decode()
		if err != nil {
			return "", nil, err
		}
		return standardEvent(typ, obj, &f.d)
	}
	if _, err := io.ReadFull(f.in, f.head[:]); err != nil {
		return "", nil, err
	}
	n := binary.BigEndian.Uint32(f.head[:])
	if n > maxFrame {
		return "", nil, fmt.Errorf("a watch event of %d bytes", n)
	}
	frame, err := readInto(f.in, &f.buf, int(n))
	if err != nil {
		return "", nil, err
	}
	return decodeEvent(frame, &f.d)
}

// sniff tells the body's encoding by its first bytes: a protobuf frame
// starts with its length, whose first byte is 0 or 1 (see maxFrame); any
// other encoding is left to client-go's decoding.
func (f *frames) sniff() error {
	if f.in == nil {
		f.in = bufio.NewReaderSize(f.body, answerBuffer)
	}
	peek, err := f.in.Peek(len(f.head))
	if len(peek) == 0 && err != nil {
		return err
	}
	f.sniffed = true
	if peek[0] <= maxFrame>>24 {
		return nil
	}
	mediaType, err := standardMediaType(peek, true)
	if err == nil {
		f.std, err = standardEvents(f.in, f.body, mediaType)
	}
	return err
}

// reopen goes on from the streaming list's end with a plain watch.
func (f *frames) reopen() error {
	body, err := f.plain(f.from)
	if err != nil {
		return fmt.Errorf("watch pods after the streamed list: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = f.body.Close()
	f.body, f.plain, f.from = body, nil, ""
	f.in, f.sniffed, f.std = nil, false, nil
	if f.closed {
		_ = body.Close()
		return io.EOF
	}
	return nil
}

// Close implements watch.Decoder.
func (f *frames) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	_ = f.body.Close()
}

// decodeEvent reads one WatchEvent: a pod row, or the Status of an ERROR.
func decodeEvent(frame []byte, d *decoder) (watch.EventType, runtime.Object, error) {
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
		d = &decoder{}
	}
	row, err := d.decodePod(inner)
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
