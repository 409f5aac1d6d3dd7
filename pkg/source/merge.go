package source

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Merge lists and watches several sources as one: the pods of several
// namespaces, each its own source, for a user who may list pods in each
// of them but not in all. A list is the sources' lists together; a watch
// is their watches together, each resumed from the resourceVersion of
// the last event of its own that was handed on, since one
// resourceVersion cannot tell where each of several watches stands. Any
// sub-watch that ends or fails ends the merged watch, so the reflector
// resumes (or relists) them together.
func Merge(sources ...Source) Source {
	m := &merged{sources: sources}
	return Source{List: m.list, Watch: m.watch}
}

type merged struct {
	sources []Source

	mu sync.Mutex
	// rvs holds, per source, where its next watch resumes; gen counts the
	// lists, so that a watch of an older list records nothing.
	rvs []string
	gen int
}

func (m *merged) list(ctx context.Context, opts metav1.ListOptions, call Call) (*PodRowList, error) {
	out := &PodRowList{}
	rvs := make([]string, len(m.sources))
	for i, s := range m.sources {
		l, err := s.List(ctx, opts, call)
		if err != nil {
			return nil, err
		}
		if l.Continue != "" {
			return nil, fmt.Errorf("merged list: source %d returned a partial list", i)
		}
		out.Items = append(out.Items, l.Items...)
		rvs[i] = l.ResourceVersion
		// The reflector needs one resourceVersion; the merged watch does
		// not use it.
		out.ResourceVersion = l.ResourceVersion
	}
	m.mu.Lock()
	m.rvs, m.gen = rvs, m.gen+1
	m.mu.Unlock()
	return out, nil
}

func (m *merged) watch(ctx context.Context, opts metav1.ListOptions, call Call) (watch.Interface, error) {
	m.mu.Lock()
	rvs, gen := slices.Clone(m.rvs), m.gen
	m.mu.Unlock()
	mw := &mergedWatch{m: m, gen: gen, out: make(chan watch.Event), stop: make(chan struct{})}
	for i, s := range m.sources {
		o := opts
		if i < len(rvs) && rvs[i] != "" {
			o.ResourceVersion = rvs[i]
		}
		w, err := s.Watch(ctx, o, call)
		if err != nil {
			mw.Stop()
			return nil, err
		}
		mw.inner = append(mw.inner, w)
	}
	for i, w := range mw.inner {
		mw.wg.Go(func() { mw.pump(i, w) })
	}
	go func() {
		mw.wg.Wait()
		close(mw.out)
	}()
	return mw, nil
}

// record notes where source i stands after an event it handed on.
func (m *merged) record(gen, i int, ev watch.Event) {
	if ev.Type == watch.Error {
		return
	}
	obj, err := meta.Accessor(ev.Object)
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if gen == m.gen && i < len(m.rvs) {
		m.rvs[i] = obj.GetResourceVersion()
	}
}

type mergedWatch struct {
	m     *merged
	gen   int
	inner []watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

// pump hands on the events of sub-watch i until it ends, fails, or the
// merged watch stops; its end stops the others.
func (mw *mergedWatch) pump(i int, w watch.Interface) {
	defer mw.Stop()
	for {
		select {
		case <-mw.stop:
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			select {
			case mw.out <- ev:
				mw.m.record(mw.gen, i, ev)
			case <-mw.stop:
				return
			}
			if ev.Type == watch.Error {
				return
			}
		}
	}
}

func (mw *mergedWatch) Stop() {
	mw.once.Do(func() {
		close(mw.stop)
		for _, w := range mw.inner {
			w.Stop()
		}
	})
}

func (mw *mergedWatch) ResultChan() <-chan watch.Event { return mw.out }
