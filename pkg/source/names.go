package source

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// ByName narrows another source to the named pods. Field selectors match one
// name only, so several names are filtered here; a name not created yet
// simply matches nothing until it appears.
type ByName struct {
	Inner interface {
		cache.ListerWithContext
		cache.WatcherWithContext
	}
	Names map[string]bool
}

// IsWatchListSemanticsUnSupported keeps list + watch, as the inner sources do.
func (b *ByName) IsWatchListSemanticsUnSupported() bool { return true }

// List implements cache.Lister.
func (b *ByName) List(opts metav1.ListOptions) (runtime.Object, error) {
	return b.ListWithContext(context.Background(), opts)
}

// ListWithContext implements cache.ListerWithContext.
func (b *ByName) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	obj, err := b.Inner.ListWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	list := obj.(*PodRowList)
	kept := list.Items[:0]
	for _, row := range list.Items {
		if b.Names[row.Pod.Name] {
			kept = append(kept, row)
		}
	}
	list.Items = kept
	return list, nil
}

// Watch implements cache.Watcher.
func (b *ByName) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return b.WatchWithContext(context.Background(), opts)
}

// WatchWithContext implements cache.WatcherWithContext.
func (b *ByName) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := b.Inner.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		row, ok := ev.Object.(*PodRow)
		// Bookmarks carry no name but move the resourceVersion on.
		return ev, !ok || ev.Type == watch.Bookmark || b.Names[row.Pod.Name]
	}), nil
}
