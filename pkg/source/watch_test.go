package source

import (
	"github.com/kubectl-podsync/kubectl-podsync/internal/podtest"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// A watch read from its frames gives the rows the typed client would:
// each pod whole (managedFields dropped unless kept) or packed, an ERROR
// as its Status, a bookmark's resourceVersion; then the end of the
// stream, and a stream cut inside a frame is said to be cut.
func TestWatchFrames(t *testing.T) {
	pod := podtest.BenchPod()
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}
	changed := pod.DeepCopy()
	changed.ResourceVersion, changed.Status.PodIP = "8", "10.0.0.9"
	bookmark := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9"}}
	expired := apierrors.NewResourceExpired("too old resource version: 1 (5)").ErrStatus
	stream := podtest.EncodeWatch(t, watch.Event{Type: watch.Added, Object: pod.DeepCopy()}, watch.Event{Type: watch.Modified, Object: changed.DeepCopy()},
		watch.Event{Type: watch.Bookmark, Object: bookmark}, watch.Event{Type: watch.Error, Object: &expired})
	want := []*corev1.Pod{pod, changed}
	for _, c := range []struct {
		name string
		d    wire.Decoder
	}{{"whole", wire.Decoder{}}, {"whole, managedFields kept", wire.Decoder{KeepManagedFields: true}}, {"packed", wire.Decoder{Pack: true}}} {
		t.Run(c.name, func(t *testing.T) {
			f := &frames{body: io.NopCloser(bytes.NewReader(stream)), d: c.d}
			for i, w := range want {
				typ, obj, err := f.Decode()
				if err != nil {
					t.Fatal(err)
				}
				row, ok := obj.(*wire.PodRow)
				if !ok || typ != []watch.EventType{watch.Added, watch.Modified}[i] {
					t.Fatalf("event %d: %s %T", i, typ, obj)
				}
				got, err := row.Whole()
				if err != nil {
					t.Fatal(err)
				}
				if c.d.Pack {
					// A packed row's pod is decoded anew for the printers,
					// which need it typed.
					if got.TypeMeta != wire.PodTypeMeta() {
						t.Errorf("event %d: the packed pod's type is %+v", i, got.TypeMeta)
					}
					got.TypeMeta = metav1.TypeMeta{}
				}
				w = podtest.RoundTrip(t, w) // protobuf keeps times to the second
				if !c.d.KeepManagedFields {
					w.ManagedFields = nil
				}
				if !equality.Semantic.DeepEqual(got, w) {
					t.Errorf("event %d: the pod read from the frame differs from the one sent:\n%s", i, jsonOf(w)+"\n"+jsonOf(got))
				}
				if c.d.Pack && (row.Raw == nil || row.Pod().Spec.Containers != nil && row.Pod().Spec.Containers[0].Image != "") {
					t.Errorf("event %d: not packed: a lean pod and its bytes", i)
				}
			}
			if typ, obj, err := f.Decode(); err != nil || typ != watch.Bookmark || obj.(*wire.PodRow).Pod().ResourceVersion != "9" {
				t.Errorf("bookmark: %s %v %v", typ, obj, err)
			}
			if typ, obj, err := f.Decode(); err != nil || typ != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(obj)) {
				t.Errorf("error event: %s %v %v", typ, obj, err)
			}
			if _, _, err := f.Decode(); !errors.Is(err, io.EOF) {
				t.Errorf("after the last frame: %v, want EOF", err)
			}
		})
	}
	cut := &frames{body: io.NopCloser(bytes.NewReader(stream[:len(stream)-3]))}
	var err error
	for range 4 {
		if _, _, err = cut.Decode(); err != nil {
			break
		}
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("the last frame cut short: %v, want unexpected EOF", err)
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A run that ends with its first list asks for no watch after it: a
// source that lists watches idly, without a request, and a streaming
// source is asked for its list with the word not to follow it with a
// plain watch.
func TestListOnly(t *testing.T) {
	var asked []bool
	watchPods := func(_ context.Context, _ metav1.ListOptions, call Call) (watch.Interface, error) {
		asked = append(asked, call.ListOnly)
		return watch.NewEmptyWatch(), nil
	}
	w, err := Source{Watch: watchPods}.ListOnly().Watch(context.Background(), metav1.ListOptions{}, Call{})
	if err != nil || len(asked) != 0 {
		t.Fatalf("a listing source's watch asked the server (%v, %v)", asked, err)
	}
	select {
	case ev, open := <-w.ResultChan():
		t.Fatalf("the idle watch sent %v (open: %v)", ev, open)
	case <-time.After(50 * time.Millisecond):
	}
	w.Stop()
	if _, err := (Source{Watch: watchPods, StreamsLists: true}).ListOnly().Watch(context.Background(), metav1.ListOptions{}, Call{}); err != nil || len(asked) != 1 || !asked[0] {
		t.Errorf("a streaming source was not asked for its list alone: %v, %v", asked, err)
	}
}
