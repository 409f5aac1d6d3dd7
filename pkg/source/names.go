package source

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// ByName narrows the source to the named pods. Field selectors match one
// name only, so several names are filtered here; a name not created yet
// simply matches nothing until it appears.
func (s Source) ByName(names map[string]bool) Source {
	return s.where(func(p *corev1.Pod) bool { return names[p.Name] })
}

// InNamespaces narrows a source of every namespace to the pods of these
// namespaces: one cluster-scoped list and watch instead of one per
// namespace.
func (s Source) InNamespaces(namespaces map[string]bool) Source {
	return s.where(func(p *corev1.Pod) bool { return namespaces[p.Namespace] })
}

// where keeps the pods that keep accepts. What keep accepts must never
// change for a pod, as a name or a namespace does not: a pod it stopped
// accepting would stay in the informer's cache.
func (s Source) where(keep func(*corev1.Pod) bool) Source {
	return Source{
		List: func(ctx context.Context, opts metav1.ListOptions) (*PodRowList, error) {
			list, err := s.List(ctx, opts)
			if err != nil {
				return nil, err
			}
			kept := list.Items[:0]
			for _, row := range list.Items {
				if keep(row.Pod) {
					kept = append(kept, row)
				}
			}
			list.Items = kept
			return list, nil
		},
		Watch: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := s.Watch(ctx, opts)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
				row, ok := ev.Object.(*PodRow)
				// Bookmarks carry no name but move the resourceVersion on.
				return ev, !ok || ev.Type == watch.Bookmark || keep(row.Pod)
			}), nil
		},
	}
}
