package source

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kubectl-podsync/kubectl-podsync/internal/retry"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// Objects lists and watches plain Pods (protobuf where the clients are set
// up for it), for the outputs that print no table. Lists go through list,
// whose requests --request-timeout bounds; watches go through stream,
// which must have no client timeout, since a watch is meant to stay open.
// With raw and rawWatch, REST clients of the same kinds, lists and
// watches are read from their protobuf bytes (see package wire and
// watch.go), managedFields left undecoded, and a list may be streamed
// (see initial.go): the fastest way to read every pod of a big cluster.
func Objects(list, stream kubernetes.Interface, raw, rawWatch rest.Interface, f Filter, r Reporter) Source {
	page := func(ctx context.Context, opts metav1.ListOptions) (*PodRowList, error) {
		if raw != nil {
			return readPods(ctx, raw, f.Namespace, opts, f.decoder(r), nil)
		}
		pods, err := list.CoreV1().Pods(f.Namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list pods: %w", err)
		}
		if !f.KeepManagedFields {
			stripManagedFields(pods)
		}
		out := &PodRowList{ListMeta: pods.ListMeta, Items: make([]wire.PodRow, len(pods.Items))}
		for i := range pods.Items {
			out.Items[i] = *wire.RowOf(&pods.Items[i])
			if err := f.pack(&out.Items[i]); err != nil {
				return nil, fmt.Errorf("list pods: %w", err)
			}
		}
		return out, nil
	}
	return Source{
		StreamsLists: raw != nil && rawWatch != nil,
		List: func(ctx context.Context, opts metav1.ListOptions, call Call) (*PodRowList, error) {
			return listReported(ctx, f.apply(opts), call, page, r)
		},
		Watch: func(ctx context.Context, opts metav1.ListOptions, call Call) (watch.Interface, error) {
			var listed func(error)
			if streamsInitialEvents(opts) {
				listed = func(err error) { orNop(r).Result("list", err) }
			}
			w, err := f.watch(ctx, stream, rawWatch, f.apply(opts), call, listed, r)
			reportWatch(r, opts, err)
			if err != nil {
				return nil, fmt.Errorf("watch pods: %w", err)
			}
			return w, nil
		},
	}
}

// reportWatch reports the outcome of a watch request. A streaming list
// is the list, for the reporter, except when the server refuses it:
// client-go then lists in pages and watches, whose own answers say what
// was refused (a user may list but not watch, which --once allows). A
// streaming list that was answered has not succeeded yet: its stream
// reports the list's outcome once its pods are all in, or it fails (see
// frames).
func reportWatch(r Reporter, opts metav1.ListOptions, err error) {
	var status apierrors.APIStatus
	switch {
	case !streamsInitialEvents(opts):
		orNop(r).Result("watch", err)
	case err != nil && (!errors.As(err, &status) || retry.Unreachable(err)):
		orNop(r).Result("list", err)
	}
}

// watch watches the pods; listed, on a streaming list, hears the list's
// outcome (see rawWatch).
func (f Filter) watch(ctx context.Context, stream kubernetes.Interface, raw rest.Interface, opts metav1.ListOptions, call Call, listed func(error), r Reporter) (watch.Interface, error) {
	if raw != nil {
		return rawWatch(ctx, raw, f.Namespace, opts, call, f.decoder(r), listed)
	}
	w, err := stream.CoreV1().Pods(f.Namespace).Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, f.wrapPodEvent), nil
}

// wrapPodEvent turns a Pod event into a PodRow event, packed for a lean
// filter; errors pass unchanged so the reflector can act on them (410
// Gone means relist).
func (f Filter) wrapPodEvent(in watch.Event) (watch.Event, bool) {
	pod, ok := in.Object.(*corev1.Pod)
	if !ok {
		return in, true
	}
	row := wire.RowOf(pod)
	if err := f.pack(row); err != nil {
		// A pod the client just decoded encodes again; if it ever did
		// not, it is kept whole rather than lost.
		klog.V(2).InfoS("Keeping a pod whole", "err", err)
		row = wire.RowOf(pod)
	}
	in.Object = row
	return in, true
}

// decoder reads the pods of protobuf lists and watches: packed for a lean
// filter; a pod that does not decode is left out and told to r.
func (f Filter) decoder(r Reporter) wire.Decoder {
	return wire.Decoder{Pack: f.Lean, KeepManagedFields: f.KeepManagedFields, Skip: skipper(r)}
}

// pack packs a row of a whole pod for a lean filter (see Pack).
func (f Filter) pack(row *wire.PodRow) error {
	if !f.Lean {
		return nil
	}
	return wire.Pack(row, f.KeepManagedFields)
}
