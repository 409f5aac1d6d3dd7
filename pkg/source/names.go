package source

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// ByName narrows the source to the named pods. Field selectors match one
// name only, so several names are filtered here; a name not created yet
// simply matches nothing until it appears.
func (s Source) ByName(names map[string]bool) Source {
	return s.where(func(m *metav1.ObjectMeta) bool { return names[m.Name] })
}

// InNamespaces narrows a source of every namespace to the pods of these
// namespaces: one cluster-scoped list and watch instead of one per
// namespace.
func (s Source) InNamespaces(namespaces map[string]bool) Source {
	return s.where(func(m *metav1.ObjectMeta) bool { return namespaces[m.Namespace] })
}

// where keeps the pods that keep accepts, in lists, in the pages an
// observer sees, and in watches. What keep accepts must never change for
// a pod, as a name or a namespace does not: a pod it stopped accepting
// would stay in the informer's cache.
func (s Source) where(keep func(*metav1.ObjectMeta) bool) Source {
	narrowed := func(call Call) Call {
		if observe := call.Observe; observe != nil {
			call.Observe = func(p *PodRowList) { observe(p.Where(keep)) }
		}
		return call
	}
	return Source{
		StreamsLists: s.StreamsLists,
		List: func(ctx context.Context, opts metav1.ListOptions, call Call) (*PodRowList, error) {
			list, err := s.List(ctx, opts, narrowed(call))
			if err != nil {
				return nil, err
			}
			return list.Where(keep), nil
		},
		Watch: func(ctx context.Context, opts metav1.ListOptions, call Call) (watch.Interface, error) {
			w, err := s.Watch(ctx, opts, narrowed(call))
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
				row, ok := ev.Object.(*wire.PodRow)
				// Bookmarks carry no name but move the resourceVersion on.
				return ev, !ok || ev.Type == watch.Bookmark || keep(row.Meta())
			}), nil
		},
	}
}

// Where is the list narrowed to the pods keep accepts; the list itself is
// left alone, since a page may be seen by an observer and the reflector
// both.
func (l *PodRowList) Where(keep func(*metav1.ObjectMeta) bool) *PodRowList {
	out := &PodRowList{TypeMeta: l.TypeMeta, ListMeta: l.ListMeta}
	for _, row := range l.Items {
		if keep(row.Meta()) {
			out.Items = append(out.Items, row)
		}
	}
	return out
}
