package source

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// Objects lists and watches plain Pods (protobuf where the client is set up
// for it). It is used when no table output is wanted.
type Objects struct {
	Client   kubernetes.Interface
	Filter   Filter
	Reporter Reporter
}

// IsWatchListSemanticsUnSupported keeps the reflector on list + watch, the
// same path as the table source, so both behave alike on reconnects.
func (o *Objects) IsWatchListSemanticsUnSupported() bool { return true }

// List implements cache.Lister.
func (o *Objects) List(opts metav1.ListOptions) (runtime.Object, error) {
	return o.ListWithContext(context.Background(), opts)
}

// ListWithContext implements cache.ListerWithContext.
func (o *Objects) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return listReported(ctx, o.Filter.apply(opts), o.list, o.Reporter)
}

func (o *Objects) list(ctx context.Context, opts metav1.ListOptions) (*PodRowList, error) {
	pods, err := o.Client.CoreV1().Pods(o.Filter.Namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	stripManagedFields(pods)
	out := &PodRowList{ListMeta: pods.ListMeta, Items: make([]PodRow, len(pods.Items))}
	for i := range pods.Items {
		out.Items[i].Pod = &pods.Items[i]
	}
	return out, nil
}

// Watch implements cache.Watcher.
func (o *Objects) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return o.WatchWithContext(context.Background(), opts)
}

// WatchWithContext implements cache.WatcherWithContext.
func (o *Objects) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := o.Client.CoreV1().Pods(o.Filter.Namespace).Watch(ctx, o.Filter.apply(opts))
	orNop(o.Reporter).Result("watch", err)
	if err != nil {
		return nil, fmt.Errorf("watch pods: %w", err)
	}
	return watch.Filter(w, wrapPodEvent), nil
}

// wrapPodEvent turns a Pod event into a PodRow event; errors pass unchanged
// so the reflector can act on them (410 Gone means relist).
func wrapPodEvent(in watch.Event) (watch.Event, bool) {
	if pod, ok := in.Object.(*corev1.Pod); ok {
		in.Object = &PodRow{Pod: pod}
	}
	return in, true
}
