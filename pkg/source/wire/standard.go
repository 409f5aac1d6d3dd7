package wire

import (
	"bufio"
	"fmt"
	"io"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/recognizer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	restclientwatch "k8s.io/client-go/rest/watch"
	"k8s.io/klog/v2"

	"github.com/kubectl-podsync/kubectl-podsync/internal/features"
)

// Pods are asked for as protobuf, or else JSON, as client-go asks for
// them. A server, or a proxy in front of it, that does not speak protobuf
// answers in JSON (in CBOR, some day): such an answer is read with
// client-go's own decoding, exactly as the clientset would read it, and
// each pod becomes the row it would have become from protobuf.

// ListAccept asks for a list as protobuf, else JSON.
const ListAccept = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON

// WatchAccept asks for a watch as length-delimited protobuf frames, else
// JSON.
const WatchAccept = runtime.ContentTypeProtobuf + ";stream=watch," + runtime.ContentTypeJSON

// standardDecoding is client-go's decoding of the clientset's answers:
// the typed scheme, without conversion.
var standardDecoding = sync.OnceValue(func() runtime.ClientNegotiator {
	return runtime.NewClientNegotiator(scheme.Codecs.WithoutConversion(), corev1.SchemeGroupVersion)
})

// fast says whether this codec reads the pods. With the FastCodec gate
// off (see internal/features) every answer, protobuf too, is read with
// client-go's standard decoding and every row keeps its whole pod: the
// rows print as they always do, which a user filing a bug can check.
func fast() bool { return features.Enabled(features.FastCodec) }

// slowed says once, at -v=2, that protobuf is read by client-go: a user
// who switched the codec off sees that it took.
var slowed sync.Once

func readingProtobufSlowly() {
	slowed.Do(func() {
		klog.V(2).InfoS("Decoding pods with client-go's standard decoding: the FastCodec feature gate is off",
			"env", features.EnvPrefix+string(features.FastCodec)+"=false")
	})
}

// isProtobuf says whether an answer's first bytes are protobuf's.
func isProtobuf(peek []byte) bool {
	return len(peek) >= len(protobufMagic) && string(peek[:len(protobufMagic)]) == string(protobufMagic)
}

// standardMediaType names the encoding of an answer that is not protobuf
// by its first bytes, as client-go's serializers recognize them.
func standardMediaType(peek []byte, stream bool) (string, error) {
	for _, info := range scheme.Codecs.SupportedMediaTypes() {
		r, ok := info.Serializer.(recognizer.RecognizingDecoder)
		if !ok || info.MediaType == runtime.ContentTypeProtobuf && fast() || stream && info.StreamSerializer == nil {
			continue
		}
		if yes, _, err := r.RecognizesData(peek); err == nil && yes {
			return info.MediaType, nil
		}
	}
	return "", fmt.Errorf("the answer is in no encoding known here (it starts with %q)", peek)
}

// readStandardList reads a list of pods in the encoding mediaType with
// client-go's decoding, and makes each pod a row with d.
func readStandardList(body io.Reader, mediaType string, d *Decoder, meta func(metav1.ListMeta), item func(PodRow)) error {
	dec, err := standardDecoding().Decoder(mediaType, nil)
	if err != nil {
		return fmt.Errorf("read a pod list as %s: %w", mediaType, err)
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return fmt.Errorf("read a pod list: %w", err)
	}
	obj, _, err := dec.Decode(data, nil, &corev1.PodList{})
	if err != nil {
		return fmt.Errorf("decode a pod list as %s: %w", mediaType, err)
	}
	pods, ok := obj.(*corev1.PodList)
	if !ok {
		return fmt.Errorf("the server answered with %T instead of a pod list", obj)
	}
	meta(pods.ListMeta)
	for i := range pods.Items {
		row, err := d.podRow(&pods.Items[i])
		if err != nil {
			return err
		}
		item(row)
	}
	return nil
}

// podRow is the row of a pod decoded by client-go, which the row may keep
// (and change): whole without managedFields unless kept, lean or packed,
// as d would have made it of the pod's protobuf bytes.
func (d *Decoder) podRow(pod *corev1.Pod) (PodRow, error) {
	// A pod read from protobuf has no type, whatever the server wrote.
	pod.TypeMeta = metav1.TypeMeta{}
	row := PodRow{whole: pod}
	if !d.Lean && !d.Pack || !fast() {
		if !d.KeepManagedFields {
			pod.ManagedFields = nil
		}
		return row, nil
	}
	if err := redecode(&row, Decoder{Lean: d.Lean, Pack: d.Pack, KeepManagedFields: d.KeepManagedFields}); err != nil {
		return PodRow{}, err
	}
	return row, nil
}

// standardEvents reads a watch in the encoding mediaType with client-go's
// decoding.
func standardEvents(in *bufio.Reader, body io.Closer, mediaType string) (*restclientwatch.Decoder, error) {
	objects, events, framer, err := standardDecoding().StreamDecoder(mediaType, nil)
	if err != nil {
		return nil, fmt.Errorf("read a watch as %s: %w", mediaType, err)
	}
	frames := framer.NewFrameReader(readCloser{in, body})
	return restclientwatch.NewDecoder(streaming.NewDecoder(frames, events), objects), nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// standardEvent makes the pod of an event decoded by client-go a row;
// an ERROR's Status passes as it is.
func standardEvent(typ watch.EventType, obj runtime.Object, d *Decoder) (watch.EventType, runtime.Object, error) {
	pod, ok := obj.(*corev1.Pod)
	switch {
	case typ == watch.Error:
		return typ, obj, nil
	case !ok:
		return "", nil, fmt.Errorf("a watch event %s holds %T instead of a pod", typ, obj)
	case typ == watch.Bookmark:
		// A bookmark's annotations say whether it ends a streaming
		// list, and a lean row would drop them.
		return typ, RowOf(pod), nil
	}
	row, err := d.podRow(pod)
	if err != nil {
		return "", nil, err
	}
	return typ, &row, nil
}
