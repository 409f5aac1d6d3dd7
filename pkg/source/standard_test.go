package source

import (
	"github.com/kubectl-podsync/kubectl-podsync/internal/podtest"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// decoders are the ways a source makes rows of pods.
var decoders = []struct {
	name string
	d    wire.Decoder
}{
	{"whole", wire.Decoder{}},
	{"whole, managedFields kept", wire.Decoder{KeepManagedFields: true}},
	{"lean", wire.Decoder{Lean: true}},
	{"packed", wire.Decoder{Pack: true}},
	{"packed, managedFields kept", wire.Decoder{Pack: true, KeepManagedFields: true}},
}

func standardPods() []corev1.Pod {
	p := *podtest.BenchPod()
	p.Annotations = map[string]string{"b": "2", "a": "1"}
	p.Finalizers = []string{"example.com/keep"}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}
	pods := []corev1.Pod{p, podtest.Pod("b", "web-2", "7")}
	// A server writes times to the second, in either encoding.
	for i := range pods {
		raw, _ := json.Marshal(&pods[i])
		pods[i] = corev1.Pod{}
		_ = json.Unmarshal(raw, &pods[i])
	}
	return pods
}

// A list answered in JSON, by a server or proxy that speaks no protobuf,
// gives exactly the rows its protobuf answer gives, in every kind of
// row; both are asked for with the Accept header client-go sends.
func TestListInJSONReadsAsInProtobuf(t *testing.T) {
	pods := standardPods()
	for _, c := range decoders {
		t.Run(c.name, func(t *testing.T) {
			read := func(jsonOnly bool) *PodRowList {
				f := &fakeServer{t: t, pods: pods, listRV: "42", jsonOnly: jsonOnly}
				list, err := readPods(context.Background(), restClient(t, f), "", metav1.ListOptions{Limit: 1}, c.d, nil)
				if err != nil {
					t.Fatalf("jsonOnly=%v: %v", jsonOnly, err)
				}
				for _, r := range f.requests {
					if got := r.Header.Get("Accept"); got != wire.ListAccept {
						t.Errorf("Accept %q, want %q", got, wire.ListAccept)
					}
				}
				return list
			}
			want, got := read(false), read(true)
			if len(want.Items) != 1 || want.Continue == "" {
				t.Fatalf("protobuf page: %+v", want)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("rows of the JSON answer differ from those of the protobuf one:\n%+v %s\n%+v %s", got, jsonOf(got.Items[0].Identity()), want, jsonOf(want.Items[0].Identity()))
			}
		})
	}
}

// encodeJSONWatch encodes events as the API server streams a JSON watch.
func encodeJSONWatch(t *testing.T, events ...watch.Event) []byte {
	t.Helper()
	var out bytes.Buffer
	codec := scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion)
	for _, ev := range events {
		raw, err := runtime.Encode(codec, ev.Object)
		if err != nil {
			t.Fatal(err)
		}
		line, err := json.Marshal(&metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: raw}})
		if err != nil {
			t.Fatal(err)
		}
		out.Write(append(line, '\n'))
	}
	return out.Bytes()
}

// A watch answered in JSON gives exactly the events its protobuf stream
// gives: each pod as the same row, an ERROR as its Status, a bookmark
// with its annotations; then the end of the stream.
func TestWatchInJSONReadsAsInProtobuf(t *testing.T) {
	pods := standardPods()
	changed := pods[0].DeepCopy()
	changed.ResourceVersion, changed.Status.PodIP = "8", "10.0.0.9"
	bookmark := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	expired := apierrors.NewResourceExpired("too old resource version: 1 (5)").ErrStatus
	events := func() []watch.Event {
		return []watch.Event{{Type: watch.Added, Object: pods[0].DeepCopy()}, {Type: watch.Added, Object: pods[1].DeepCopy()},
			{Type: watch.Modified, Object: changed.DeepCopy()}, {Type: watch.Bookmark, Object: bookmark.DeepCopy()},
			{Type: watch.Deleted, Object: changed.DeepCopy()}, {Type: watch.Error, Object: expired.DeepCopy()}}
	}
	protoStream, jsonStream := podtest.EncodeWatch(t, events()...), encodeJSONWatch(t, events()...)
	for _, c := range decoders {
		t.Run(c.name, func(t *testing.T) {
			read := func(stream []byte) []watch.Event {
				f := &frames{body: io.NopCloser(bytes.NewReader(stream)), d: c.d}
				var out []watch.Event
				for {
					typ, obj, err := f.Decode()
					if errors.Is(err, io.EOF) {
						return out
					}
					if err != nil {
						t.Fatal(err)
					}
					if s, ok := obj.(*metav1.Status); ok {
						s.TypeMeta = metav1.TypeMeta{} // not kept in protobuf
					}
					out = append(out, watch.Event{Type: typ, Object: obj})
				}
			}
			want, got := read(protoStream), read(jsonStream)
			if len(want) != len(events()) {
				t.Fatalf("%d events from protobuf, want %d", len(want), len(events()))
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("events of the JSON watch differ from those of the protobuf one:\n%s\n%s", jsonOf(got), jsonOf(want))
			}
			if !endsInitialEvents(got[3].Type, got[3].Object) {
				t.Errorf("the bookmark lost its annotation: %+v", got[3].Object)
			}
		})
	}
}

// An answer in an encoding neither protobuf nor one client-go reads is an
// error naming what it starts with, never an empty list.
func TestListInAnUnknownEncodingIsAnError(t *testing.T) {
	err := wire.ReadList(bytes.NewReader([]byte("<html>")), &wire.Decoder{}, func(metav1.ListMeta) {}, func(wire.PodRow) {})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("<html>")) {
		t.Errorf("got %v", err)
	}
	f := &frames{body: io.NopCloser(bytes.NewReader([]byte("<html><body>bad gateway</body></html>")))}
	if _, _, err := f.Decode(); err == nil {
		t.Error("a watch of HTML decoded")
	}
}

// A table source behind a server that answers lists in JSON lists the
// same rows and cells as behind one that answers protobuf.
func TestTablesInJSON(t *testing.T) {
	pods := []corev1.Pod{podtest.Pod("a", "web-1", "5"), podtest.Pod("a", "web-2", "7")}
	rows := func(jsonOnly bool) *PodRowList {
		f := &fakeServer{pods: pods, listRV: "42", jsonOnly: jsonOnly}
		return listRows(t, newTables(t, f, Filter{Lean: true}), metav1.ListOptions{})
	}
	if got, want := rows(true), rows(false); !reflect.DeepEqual(got, want) || len(got.Items) != 2 || got.Items[0].Cells == nil {
		t.Errorf("rows from JSON:\n%+v\nfrom protobuf:\n%+v", got, want)
	}
}
