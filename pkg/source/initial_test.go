package source

import (
	"github.com/kubectl-podsync/kubectl-podsync/internal/podtest"

	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// A streaming list's pods reach the page observer in pages of a
// paginated list's sizes, in the order they came, all of them before the
// bookmark that ends them reaches the reflector, which still gets every
// event; the bookmark keeps the annotation that says it ends the list.
// Events after it, and a watch that streams no list, are not paged.
func TestStreamingListPages(t *testing.T) {
	n := FirstPageSize + PageSize + 7
	events := make([]watch.Event, 0, n+2)
	for i := range n {
		pod := podtest.BenchPod()
		pod.Name = fmt.Sprintf("pod-%05d", i)
		events = append(events, watch.Event{Type: watch.Added, Object: pod})
	}
	end := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	later := podtest.BenchPod()
	later.Name = "later"
	events = append(events, watch.Event{Type: watch.Bookmark, Object: end}, watch.Event{Type: watch.Added, Object: later})
	stream := podtest.EncodeWatch(t, events...)

	var mu sync.Mutex
	var pages []*PodRowList
	call := Call{Observe: func(p *PodRowList) {
		mu.Lock()
		defer mu.Unlock()
		pages = append(pages, p)
	}}
	observed := func() []*PodRowList {
		mu.Lock()
		defer mu.Unlock()
		return append([]*PodRowList(nil), pages...)
	}
	f := &frames{body: io.NopCloser(bytes.NewReader(stream)), d: wire.Decoder{Pack: true},
		initial: initialPagesFor(call, metav1.ListOptions{SendInitialEvents: ptr.To(true)})}
	for i := range n {
		typ, obj, err := f.Decode()
		if err != nil || typ != watch.Added || obj.(*wire.PodRow).Meta().Name != fmt.Sprintf("pod-%05d", i) {
			t.Fatalf("event %d: %s %v %v", i, typ, obj, err)
		}
	}
	typ, obj, err := f.Decode()
	if err != nil || typ != watch.Bookmark || obj.(*wire.PodRow).Meta().Annotations[metav1.InitialEventsAnnotationKey] != "true" {
		t.Fatalf("the bookmark: %s %v %v", typ, obj, err)
	}
	got := observed()
	sizes, next := []int{}, 0
	for i, p := range got {
		sizes = append(sizes, len(p.Items))
		if last := i == len(got)-1; (p.Continue == "") != last {
			t.Errorf("page %d of %d says more follow: %q", i+1, len(got), p.Continue)
		}
		for _, row := range p.Items {
			if want := fmt.Sprintf("pod-%05d", next); row.Meta().Name != want {
				t.Fatalf("page %d: %s where %s was due", i+1, row.Meta().Name, want)
			}
			next++
		}
	}
	if fmt.Sprint(sizes) != fmt.Sprint([]int{FirstPageSize, PageSize, 7}) {
		t.Errorf("pages of %v pods, want %d, %d and 7", sizes, FirstPageSize, PageSize)
	}
	if typ, obj, err := f.Decode(); err != nil || typ != watch.Added || obj.(*wire.PodRow).Meta().Name != "later" {
		t.Fatalf("after the bookmark: %s %v %v", typ, obj, err)
	}
	if len(observed()) != len(got) {
		t.Errorf("an event after the bookmark was paged")
	}
	if p := initialPagesFor(call, metav1.ListOptions{}); p != nil {
		t.Errorf("a watch that streams no list is paged")
	}
	if p := initialPagesFor(Call{}, metav1.ListOptions{SendInitialEvents: ptr.To(true)}); p != nil {
		t.Errorf("a streaming list with no observer is paged")
	}
}

type heard struct{ verbs []string }

func (h *heard) Result(verb string, err error) {
	h.verbs = append(h.verbs, fmt.Sprintf("%s %v", verb, err != nil))
}

// A streaming list's outcome is the list's, for the reporter, except a
// refusal, which client-go answers by listing in pages and watching.
func TestReportWatch(t *testing.T) {
	refused := apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("cannot watch"))
	busy := apierrors.NewServiceUnavailable("starting")
	down := &url.Error{Op: "Get", URL: "https://127.0.0.1:1", Err: syscall.ECONNREFUSED}
	streaming := metav1.ListOptions{SendInitialEvents: ptr.To(true)}
	cases := []struct {
		name string
		opts metav1.ListOptions
		err  error
		want string
	}{
		{"a watch", metav1.ListOptions{}, nil, "[watch false]"},
		{"a refused watch", metav1.ListOptions{}, refused, "[watch true]"},
		{"a streaming list answered", streaming, nil, "[]"},
		{"a streaming list refused", streaming, refused, "[]"},
		{"a streaming list of a busy server", streaming, busy, "[list true]"},
		{"a streaming list of a server down", streaming, down, "[list true]"},
	}
	for _, c := range cases {
		h := &heard{}
		reportWatch(h, c.opts, c.err)
		if got := fmt.Sprint(h.verbs); got != c.want {
			t.Errorf("%s: reported %s, want %s", c.name, got, c.want)
		}
	}
}

// Once a streaming list's pods are in, the watch goes on as a plain one
// from the bookmark's resourceVersion, uncompressed: nothing the
// compressed stream sends after the bookmark is read, and nothing after
// the bookmark is lost.
func TestPlainWatchAfterStreamedList(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		p := podtest.BenchPod()
		p.Name = name
		return p
	}
	end := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	streamed := podtest.EncodeWatch(t, watch.Event{Type: watch.Added, Object: pod("listed")},
		watch.Event{Type: watch.Bookmark, Object: end}, watch.Event{Type: watch.Modified, Object: pod("compressed")})
	plain := podtest.EncodeWatch(t, watch.Event{Type: watch.Modified, Object: pod("after")})
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, fmt.Sprintf("%s rv=%s encoding=%s", r.URL.Query().Get("sendInitialEvents"),
			r.URL.Query().Get("resourceVersion"), r.Header.Get("Accept-Encoding")))
		mu.Unlock()
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf+";stream=watch")
		if r.URL.Query().Has("sendInitialEvents") {
			_, _ = w.Write(streamed)
		} else {
			_, _ = w.Write(plain)
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	client, err := rest.RESTClientFor(&rest.Config{Host: srv.URL, APIPath: "/api", ContentConfig: rest.ContentConfig{
		GroupVersion: &corev1.SchemeGroupVersion, NegotiatedSerializer: scheme.Codecs.WithoutConversion()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := metav1.ListOptions{SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true}
	var listed []error
	w, err := rawWatch(ctx, client, "", opts, Call{}, wire.Decoder{Pack: true}, func(err error) { listed = append(listed, err) })
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []string
	for range 3 {
		ev := <-w.ResultChan()
		row, ok := ev.Object.(*wire.PodRow)
		if !ok {
			t.Fatalf("event %s: %v", ev.Type, ev.Object)
		}
		got = append(got, fmt.Sprintf("%s %s", ev.Type, row.Meta().Name))
	}
	if want := "[ADDED listed BOOKMARK  MODIFIED after]"; fmt.Sprint(got) != want {
		t.Errorf("events %v, want %s", got, want)
	}
	if fmt.Sprint(listed) != "[<nil>]" {
		t.Errorf("the streamed list told %v, want one success", listed)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "[true rv= encoding=gzip  rv=9 encoding=identity]"; fmt.Sprint(asked) != want {
		t.Errorf("requests %q, want %s", asked, want)
	}
}

// A streaming list has succeeded once its pods are all in, not when the
// server answered: a stream that breaks before its last pod, or an ERROR
// in its place, is the list's failure, told once; a stream closed by its
// reader tells nothing.
func TestStreamedListTellsItsOutcome(t *testing.T) {
	pod := podtest.BenchPod()
	end := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	busy := apierrors.NewInternalError(errors.New("etcd is busy")).ErrStatus
	whole := podtest.EncodeWatch(t, watch.Event{Type: watch.Added, Object: pod.DeepCopy()}, watch.Event{Type: watch.Bookmark, Object: end})
	cases := []struct {
		name   string
		stream []byte
		closed bool
		want   []string
	}{
		{"all in", whole, false, []string{"<nil>"}},
		{"cut before the bookmark", whole[:len(whole)-5], false, []string{"list pods: unexpected EOF"}},
		{"ended before the bookmark", podtest.EncodeWatch(t, watch.Event{Type: watch.Added, Object: pod.DeepCopy()}), false,
			[]string{"list pods: the streamed list ended before its last pod"}},
		{"not a watch", []byte("<html>bad gateway</html>"), false, []string{`list pods: the answer is in no encoding known here (it starts with "<htm")`}},
		{"an error instead", podtest.EncodeWatch(t, watch.Event{Type: watch.Error, Object: &busy}), false, []string{"Internal error occurred: etcd is busy"}},
		{"closed by its reader", whole[:len(whole)-5], true, nil},
	}
	for _, c := range cases {
		var told []string
		f := &frames{body: io.NopCloser(bytes.NewReader(c.stream)), listed: func(err error) { told = append(told, fmt.Sprint(err)) }}
		if c.closed {
			f.Close()
		}
		for range 4 {
			if _, _, err := f.Decode(); err != nil {
				break
			}
		}
		if fmt.Sprintf("%q", told) != fmt.Sprintf("%q", c.want) {
			t.Errorf("%s: told %q, want %q", c.name, told, c.want)
		}
	}
}
