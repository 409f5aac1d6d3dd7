// Package source lists and watches pods for the informer: requests,
// pages, streamed lists, retries, merged namespaces and the tables of
// server-side printing. Each object it delivers is a wire.PodRow, read
// from the server's bytes by package wire, so the table output matches
// `kubectl get pods` on the same cluster.
package source

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// ListFunc lists pods as rows: the whole list, or the page the options ask
// for. call.Observe, if set, sees the pages as they arrive.
type ListFunc func(ctx context.Context, opts metav1.ListOptions, call Call) (*PodRowList, error)

// WatchFunc watches pods; each event's object is a *PodRow, or a
// *metav1.Status for an ERROR event. call.Observe, if set, sees the pods
// of a streaming list in pages.
type WatchFunc func(ctx context.Context, opts metav1.ListOptions, call Call) (watch.Interface, error)

// Call is what a list or watch hands the sources and decorators it goes
// through, besides the server's options.
type Call struct {
	// Observe, when not nil, sees each page of a whole list as soon as it
	// has arrived, before the list is complete, and the pods of a
	// streaming list in pages (see initial.go): a run prints its first
	// rows while the rest are still on the way. Decorators narrow what it
	// sees (ByName).
	Observe func(*PodRowList)
	// ListOnly is set by ListOnly: the run ends with its first list.
	ListOnly bool
}

// ObservePage hands a page of a whole list to the observer, if any;
// sources call it for every page they read.
func (c Call) ObservePage(page *PodRowList) {
	if c.Observe != nil && len(page.Items) > 0 {
		c.Observe(page)
	}
}

// Source is what the informer's reflector needs: a list and a watch of pod
// rows. Sources are built by Tables and Objects and changed by decorators
// (ByName, Retrying) that wrap the two functions.
type Source struct {
	List  ListFunc
	Watch WatchFunc
	// StreamsLists says that Watch serves a streaming list (WatchList:
	// the current pods as events, then a bookmark that says so), handing
	// its pods to the page observer of its context in pages (see
	// initial.go). A table cannot be streamed: only a list gives the
	// server's cells.
	StreamsLists bool
}

// ListerWatcher wraps the source for the reflector. observe, when not
// nil, sees each page of the whole lists as it arrives (Call.Observe),
// and of a streaming list. A source that cannot stream
// its lists is opted out of WatchList, so that the reflector lists it in
// pages of one snapshot instead.
func (s Source) ListerWatcher(observe func(*PodRowList)) cache.ListerWatcher {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list, err := s.List(ctx, opts, Call{Observe: observe})
			if err != nil {
				// A nil *PodRowList inside the interface would look like a list.
				return nil, err
			}
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return s.Watch(ctx, opts, Call{Observe: observe})
		},
	}
	if s.StreamsLists {
		return lw
	}
	return WithoutWatchList(lw)
}

// ListOnly is the source of a run that ends with its first list (--once).
// The reflector watches as soon as its list is in, just as the run ends: a
// source that lists gets a watch that asks the server nothing, and a
// streaming list, which is a watch itself, is not followed by the plain
// watch that would replace it (see plainWatch).
func (s Source) ListOnly() Source {
	if !s.StreamsLists {
		s.Watch = func(ctx context.Context, opts metav1.ListOptions, _ Call) (watch.Interface, error) {
			return IdleWatch(ctx, opts)
		}
		return s
	}
	next := s.Watch
	s.Watch = func(ctx context.Context, opts metav1.ListOptions, call Call) (watch.Interface, error) {
		call.ListOnly = true
		return next(ctx, opts, call)
	}
	return s
}

// IdleWatch asks the server nothing and sends nothing until it is
// stopped: the watch of a run that ends with its first list.
func IdleWatch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewProxyWatcher(make(chan watch.Event)), nil
}

// WithoutWatchList makes the reflector list lw, never ask it for a
// streaming list: for a source that cannot stream one, and for a fake
// client or a server without WatchList, which would otherwise be waited
// on.
func WithoutWatchList(lw *cache.ListWatch) cache.ListerWatcher {
	return cache.ToListWatcherWithWatchListSemantics(lw, noWatchList{})
}

type noWatchList struct{}

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// Filter selects the pods a source lists and watches; the server applies it.
type Filter struct {
	Namespace     string // empty for all namespaces
	LabelSelector string
	FieldSelector string
	// KeepManagedFields keeps managedFields (--show-managed-fields);
	// otherwise each page drops them as soon as it is decoded.
	KeepManagedFields bool
	// Lean keeps of each pod, as soon as it is decoded, only what the run
	// reads besides the printer, when nothing else reads the whole pod:
	// the table source makes rows lean (see Lean), since the printer reads
	// the server's cells; the object source packs them (see Pack), since
	// the printer reads the whole pod.
	Lean bool
}

// apply merges the filter into the reflector's options.
func (f Filter) apply(opts metav1.ListOptions) metav1.ListOptions {
	opts.LabelSelector = f.LabelSelector
	opts.FieldSelector = f.FieldSelector
	return opts
}

// Reporter hears about each request the source makes, so the caller can tell
// a failing start from a dropped connection.
type Reporter interface {
	// Result is called after every list and every watch request.
	Result(verb string, err error)
}

// BadPodReporter is what a Reporter may also be, to hear of each pod whose
// bytes do not decode: the pod is left out of the list or watch, which goes
// on with the other pods.
type BadPodReporter interface {
	BadPod(err *wire.PodError)
}

// skipper tells r of each pod left out, or logs it when r does not hear
// of them.
func skipper(r Reporter) func(*wire.PodError) {
	return func(err *wire.PodError) {
		if b, ok := r.(BadPodReporter); ok {
			b.BadPod(err)
			return
		}
		klog.ErrorS(err, "Leaving out a pod whose bytes do not decode")
	}
}

type nopReporter struct{}

func (nopReporter) Result(string, error) {}

func orNop(r Reporter) Reporter {
	if r == nil {
		return nopReporter{}
	}
	return r
}
