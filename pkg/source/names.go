package source

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// ByName narrows the source to the named pods. Field selectors match one
// name only, so several names are filtered here; a name not created yet
// simply matches nothing until it appears.
func (s Source) ByName(names map[string]bool) Source {
	return Source{
		List: func(ctx context.Context, opts metav1.ListOptions) (*PodRowList, error) {
			if observe, ok := ctx.Value(pageObserverKey{}).(func(*PodRowList)); ok {
				ctx = ObservingPages(ctx, func(p *PodRowList) { observe(named(p, names)) })
			}
			list, err := s.List(ctx, opts)
			if err != nil {
				return nil, err
			}
			return named(list, names), nil
		},
		Watch: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := s.Watch(ctx, opts)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
				row, ok := ev.Object.(*PodRow)
				// Bookmarks carry no name but move the resourceVersion on.
				return ev, !ok || ev.Type == watch.Bookmark || names[row.Pod.Name]
			}), nil
		},
	}
}

// named is list narrowed to the named pods; the list itself is left alone,
// since a page may be seen by an observer and the reflector both.
func named(list *PodRowList, names map[string]bool) *PodRowList {
	out := &PodRowList{TypeMeta: list.TypeMeta, ListMeta: list.ListMeta}
	for _, row := range list.Items {
		if names[row.Pod.Name] {
			out.Items = append(out.Items, row)
		}
	}
	return out
}
