package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// A watch of plain pods is read from its bytes by the wire package's
// events reader: each event's pod goes straight from its bytes to the
// row the informer keeps.

// rawWatch watches pods with c, a REST client without a client timeout,
// and reads each event's pod with d. listed, if not nil, hears once how a
// streaming list ended: nil with the bookmark that says its pods are all
// in, else what broke it first. The call's observer sees a streaming
// list's pods in pages; with call.ListOnly, no plain watch follows it.
func rawWatch(ctx context.Context, c rest.Interface, namespace string, opts metav1.ListOptions, call Call, d wire.Decoder, listed func(error)) (watch.Interface, error) {
	opts.Watch = true
	body, err := podsRequest(c, namespace, opts).SetHeader("Accept", wire.WatchAccept).Stream(ctx)
	if err != nil {
		return nil, err
	}
	f := &frames{body: body, d: d, initial: initialPagesFor(call, opts), listed: listed}
	if streamsInitialEvents(opts) && !call.ListOnly {
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
	return podsRequest(c, namespace, opts).SetHeader("Accept", wire.WatchAccept).SetHeader("Accept-Encoding", "identity").Stream(ctx)
}

// frames reads one watch event per length-delimited frame, or, from a
// watch that is not protobuf, per event of client-go's decoding.
type frames struct {
	body io.ReadCloser
	// events reads body; made by the first Decode.
	events *wire.Events
	d      wire.Decoder
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
	if f.events == nil {
		f.events = wire.NewEvents(f.body, &f.d)
	}
	typ, obj, err := f.events.Next()
	if f.listed != nil {
		f.tellListed(typ, obj, err)
	}
	if err == nil && f.initial != nil && f.initial.see(typ, obj) {
		f.initial = nil
	}
	if err == nil && f.plain != nil && endsInitialEvents(typ, obj) {
		f.from = obj.(*wire.PodRow).Meta().ResourceVersion
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
	f.events = nil
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
