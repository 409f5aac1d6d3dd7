package cmd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/controller"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/output"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source"
)

// errTimeout is the cause of a run that reached --timeout.
var errTimeout = errors.New("timeout reached")

// Run streams messages until the run ends: --once, --until met or failed,
// --timeout, a signal, or a cluster that cannot be used.
func (o *Options) Run(ctx context.Context) error {
	start := time.Now()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if o.timeout > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, o.timeout, errTimeout)
		defer stop()
	}
	clients, err := newClients(o.restConfig)
	if err != nil {
		return clusterError(err)
	}
	stderr := &lockedWriter{w: o.ErrOut}
	conn := &connection{ctx: ctx, errOut: stderr, fail: cancel, requestTimeout: o.restConfig.Timeout, listOnly: o.once}
	requests := make(chan request)
	ctrl, err := controller.New(controller.Options{
		ListerWatcher: o.listerWatcher(clients, conn),
		Handler:       func(ctx context.Context, msgs []controller.Message) error { return send(ctx, requests, msgs) },
		Workers:       o.workers,
		MaxRetries:    o.maxRetries,
		Resync:        o.resync,
		OnDrop: func(key string, err error) {
			fmt.Fprintf(stderr, "error: pod %s: %s\n", key, oneLine(err))
		},
	})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = ctrl.Run(ctx) })
	s := newStream(o, ctrl, clients.typed, stderr)
	end := s.loop(ctx, requests)
	cancel(end.cause)
	wg.Wait()
	return s.finish(ctx, end, time.Since(start))
}

// request carries one key's messages to the stream goroutine and its
// answer back to the worker.
type request struct {
	msgs []controller.Message
	done chan error
}

func send(ctx context.Context, requests chan<- request, msgs []controller.Message) error {
	r := request{msgs: msgs, done: make(chan error, 1)}
	select {
	case requests <- r:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

type clients struct {
	typed        kubernetes.Interface
	table, watch rest.Interface
}

// newClients builds a protobuf clientset for plain pods and events, and JSON
// REST clients for server-side tables. Watches get no client timeout, since
// --request-timeout bounds single requests, not a stream.
func newClients(cfg *rest.Config) (*clients, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "kubectl-podsync"
	cfg.QPS, cfg.Burst = 50, 100
	typedCfg := rest.CopyConfig(cfg)
	typedCfg.ContentType = "application/vnd.kubernetes.protobuf"
	typedCfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	typed, err := kubernetes.NewForConfig(typedCfg)
	if err != nil {
		return nil, fmt.Errorf("pod client: %w", err)
	}
	tableCfg := rest.CopyConfig(cfg)
	tableCfg.GroupVersion = &corev1.SchemeGroupVersion
	tableCfg.APIPath = "/api"
	tableCfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	table, err := rest.RESTClientFor(tableCfg)
	if err != nil {
		return nil, fmt.Errorf("table client: %w", err)
	}
	tableCfg.Timeout = 0
	watch, err := rest.RESTClientFor(tableCfg)
	if err != nil {
		return nil, fmt.Errorf("table watch client: %w", err)
	}
	return &clients{typed: typed, table: table, watch: watch}, nil
}

func (o *Options) listerWatcher(c *clients, r source.Reporter) cache.ListerWatcher {
	filter := source.Filter{Namespace: o.namespace, LabelSelector: o.labelSelector, FieldSelector: o.fieldSelector}
	if len(o.names) == 1 {
		// One name can be matched by the server.
		filter.FieldSelector = joinSelectors(filter.FieldSelector, "metadata.name="+o.names[0])
	}
	var inner interface {
		cache.ListerWithContext
		cache.WatcherWithContext
	}
	if o.writer.Shape() == output.Table {
		inner = &source.Tables{Client: c.table, WatchClient: c.watch, Filter: filter, Reporter: r}
	} else {
		inner = &source.Objects{Client: c.typed, Filter: filter, Reporter: r}
	}
	if len(o.names) > 1 {
		names := map[string]bool{}
		for _, n := range o.names {
			names[n] = true
		}
		inner = &source.ByName{Inner: inner, Names: names}
	}
	return &source.Retrying{Inner: inner}
}

func joinSelectors(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}
