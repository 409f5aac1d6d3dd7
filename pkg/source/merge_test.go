package source

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// namespaceSource is one namespace's source: it lists one pod at
// resourceVersion rv and hands out fake watches, remembering where each
// was asked to start.
type namespaceSource struct {
	ns, rv string

	mu      sync.Mutex
	from    []string
	watches []*watch.FakeWatcher
}

func (n *namespaceSource) source() Source {
	return Source{
		List: func(context.Context, metav1.ListOptions, Call) (*PodRowList, error) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: n.ns, Name: "p", ResourceVersion: n.rv}}
			return &PodRowList{ListMeta: metav1.ListMeta{ResourceVersion: n.rv}, Items: []wire.PodRow{*wire.RowOf(p)}}, nil
		},
		Watch: func(_ context.Context, opts metav1.ListOptions, _ Call) (watch.Interface, error) {
			n.mu.Lock()
			defer n.mu.Unlock()
			w := watch.NewFakeWithChanSize(1, false)
			n.from = append(n.from, opts.ResourceVersion)
			n.watches = append(n.watches, w)
			return w, nil
		},
	}
}

func (n *namespaceSource) last() *watch.FakeWatcher {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.watches[len(n.watches)-1]
}

func (n *namespaceSource) starts() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.from)
}

func rowAt(ns, rv string) *wire.PodRow {
	return wire.RowOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", ResourceVersion: rv}})
}

func next(t *testing.T, w watch.Interface) (watch.Event, bool) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		return ev, ok
	case <-time.After(5 * time.Second):
		t.Fatal("no event from the merged watch")
	}
	return watch.Event{}, false
}

// Each namespace's watch resumes from its own last event handed on: one
// resourceVersion cannot say where each stands. A sub-watch that ends, or
// fails, ends the merged watch.
func TestMergeResumesEachSourceWhereItStood(t *testing.T) {
	a, b := &namespaceSource{ns: "a", rv: "10"}, &namespaceSource{ns: "b", rv: "20"}
	src := Merge(a.source(), b.source())
	ctx := context.Background()
	list, err := src.List(ctx, metav1.ListOptions{ResourceVersion: "0"}, Call{})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("list = %v, %v", list, err)
	}
	w, err := src.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion}, Call{})
	if err != nil {
		t.Fatal(err)
	}
	a.last().Modify(rowAt("a", "15"))
	if ev, _ := next(t, w); ev.Object.(*wire.PodRow).Pod().ResourceVersion != "15" {
		t.Fatalf("event = %v", ev)
	}
	b.last().Stop()
	if _, ok := next(t, w); ok {
		t.Fatal("the merged watch goes on after a sub-watch ended")
	}

	w, err = src.Watch(ctx, metav1.ListOptions{ResourceVersion: "15"}, Call{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := a.starts(), []string{"10", "15"}; !slices.Equal(got, want) {
		t.Errorf("watches of a started at %q, want %q", got, want)
	}
	if got, want := b.starts(), []string{"20", "20"}; !slices.Equal(got, want) {
		t.Errorf("watches of b started at %q, want %q", got, want)
	}
	b.last().Error(&metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonExpired, Code: 410})
	if ev, _ := next(t, w); ev.Type != watch.Error {
		t.Fatalf("event = %v, want the error", ev)
	}
	if _, ok := next(t, w); ok {
		t.Fatal("the merged watch goes on after an error")
	}
	// A relist starts every source afresh.
	if _, err := src.List(ctx, metav1.ListOptions{}, Call{}); err != nil {
		t.Fatal(err)
	}
	w, _ = src.Watch(ctx, metav1.ListOptions{}, Call{})
	defer w.Stop()
	if got := a.starts(); got[len(got)-1] != "10" {
		t.Errorf("after a relist, a's watch started at %q", got[len(got)-1])
	}
}
