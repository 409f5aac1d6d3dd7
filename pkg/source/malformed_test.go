package source

import (
	"github.com/kubectl-podsync/kubectl-podsync/internal/podtest"

	"context"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// malformedPod is a pod whose metadata reads but whose status does not:
// a second status, the one read, whose condition ends inside its type.
func malformedPod(t *testing.T) []byte {
	t.Helper()
	p := podtest.Pod("ns", "bad", "5")
	raw, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	status := protowire.AppendTag(nil, 2, protowire.BytesType)
	status = protowire.AppendBytes(status, []byte{0x0a, 0x05, 'R'})
	raw = protowire.AppendTag(raw, 3, protowire.BytesType) // Pod.Status
	return protowire.AppendBytes(raw, status)
}

// envelope wraps an object's bytes as the API server sends protobuf.
func envelope(t *testing.T, kind string, raw []byte) []byte {
	t.Helper()
	u := &runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: kind}, Raw: raw}
	body, err := u.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte("k8s\x00"), body...)
}

// watchFrame is one length-delimited frame of a protobuf watch.
func watchFrame(t *testing.T, typ watch.EventType, pod []byte) []byte {
	t.Helper()
	ev := &metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: envelope(t, "Pod", pod)}}
	raw, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(raw))), raw...)
}

type badPods struct {
	heard []string
}

func (b *badPods) Result(string, error) {}

func (b *badPods) BadPod(err *wire.PodError) { b.heard = append(b.heard, err.Error()) }

// A pod whose bytes do not decode is left out of the list and of the
// watch, told once to the reporter with its namespace and name, and the
// other pods come through: one bad object never fails the whole list or
// breaks the watch.
func TestMalformedPodIsLeftOutAndTheStreamGoesOn(t *testing.T) {
	a, c := podtest.Pod("ns", "a", "4"), podtest.Pod("ns", "c", "6")
	good := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: []corev1.Pod{a, c}}
	list, err := good.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	list = protowire.AppendTag(list, 2, protowire.BytesType) // PodList.Items
	list = protowire.AppendBytes(list, malformedPod(t))
	rawA, _ := a.Marshal()
	rawC, _ := c.Marshal()
	var frames []byte
	frames = append(frames, watchFrame(t, watch.Modified, rawA)...)
	frames = append(frames, watchFrame(t, watch.Modified, malformedPod(t))...)
	frames = append(frames, watchFrame(t, watch.Modified, rawC)...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
		if r.URL.Query().Get("watch") == "true" {
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf;stream=watch")
			_, _ = w.Write(frames)
			return
		}
		_, _ = w.Write(envelope(t, "PodList", list))
	}))
	defer srv.Close()
	client, err := rest.RESTClientFor(&rest.Config{Host: srv.URL, APIPath: "/api", ContentConfig: rest.ContentConfig{
		GroupVersion: &corev1.SchemeGroupVersion, NegotiatedSerializer: scheme.Codecs.WithoutConversion()}})
	if err != nil {
		t.Fatal(err)
	}
	for _, lean := range []bool{false, true} {
		heard := &badPods{}
		src := Objects(nil, nil, client, client, Filter{Lean: lean}, heard)
		got, err := src.List(context.Background(), metav1.ListOptions{}, Call{})
		if err != nil {
			t.Fatalf("lean %v: the list failed on one bad pod: %v", lean, err)
		}
		var names []string
		for i := range got.Items {
			names = append(names, got.Items[i].Meta().Name, string(got.Items[i].Pod().Status.Phase))
		}
		if strings.Join(names, " ") != "a Running c Running" {
			t.Errorf("lean %v: listed %v, want a and c", lean, names)
		}
		w, err := src.Watch(context.Background(), metav1.ListOptions{ResourceVersion: "7"}, Call{})
		if err != nil {
			t.Fatal(err)
		}
		names = nil
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				t.Errorf("lean %v: the watch broke: %+v", lean, ev.Object)
				break
			}
			names = append(names, ev.Object.(*wire.PodRow).Meta().Name)
		}
		w.Stop()
		if strings.Join(names, " ") != "a c" {
			t.Errorf("lean %v: watched %v, want a and c", lean, names)
		}
		if len(heard.heard) != 2 || !strings.Contains(heard.heard[0], "ns/bad") || !strings.Contains(heard.heard[1], "ns/bad") {
			t.Errorf("lean %v: the reporter heard %q, want the bad pod once from the list and once from the watch", lean, heard.heard)
		}
	}
}
