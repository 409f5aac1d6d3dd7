// Command floor is the least work a client-go program can do to see every
// pod: protobuf, decoded into typed Pods and thrown away. hack/bench runs it
// as its own small process, so that its peak RSS is its own and not the
// bench's, once per way of reading the pods, and takes the fastest as the
// floor.
//
//	floor -kubeconfig FILE [-page N]   # LIST in pages of N (default 500; 0: one unpaginated LIST)
//	floor -kubeconfig FILE -watchlist  # a WatchList stream, up to the initial-events-end bookmark
//	floor -kubeconfig FILE -watch      # watch from now on; one JSON line per event (the churn's floor)
//	floor -kubeconfig FILE -bytes [-table [-include Metadata]] [-page N]
//	                                   # LIST in pages of N, each read and thrown away, only its continue
//	                                   # token decoded: protobuf pods, or the Table kubectl prints (cells only)
//
// It prints the number of pods on stderr (and, with -bytes, the bytes read). Exit code 3 means the server
// does not serve WatchList (the reason is on stderr).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// exitUnsupported tells hack/bench that the server has no WatchList.
const exitUnsupported = 3

// errUnsupported wraps the reason the server does not serve WatchList.
var errUnsupported = errors.New("WatchList not supported by this server")

func main() {
	err := run()
	switch {
	case errors.Is(err, errUnsupported):
		fmt.Fprintf(os.Stderr, "floor: %v\n", err)
		os.Exit(exitUnsupported)
	case err != nil:
		fmt.Fprintf(os.Stderr, "floor: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	page := flag.Int64("page", 500, "pods per LIST page; 0 lists every pod in one response")
	watchList := flag.Bool("watchlist", false, "read the pods as a WatchList stream (sendInitialEvents) instead of a LIST")
	watchFlag := flag.Bool("watch", false, "watch the pods' changes from now on and print one JSON line per event: its type and the pod's name, namespace, resourceVersion and annotations")
	byteFloor := flag.Bool("bytes", false, "read each page's bytes and throw them away, decoding only its continue token")
	table := flag.Bool("table", false, "with -bytes: ask for the server's Table of the pods, cells only, as kubectl's printing does")
	include := flag.String("include", string(metav1.IncludeNone), "with -table: what each row holds beside its cells (includeObject: None, Metadata or Object)")
	selector := flag.String("l", "", "label selector (the bench probes WatchList with one that matches nothing)")
	timeout := flag.Duration("timeout", 30*time.Minute, "bound for the whole read")
	flag.Parse()
	if *kubeconfig == "" {
		return errors.New("-kubeconfig or $KUBECONFIG is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.QPS, cfg.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("clientset: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if *watchFlag {
		return watchPods(ctx, cs, *selector, os.Stdout)
	}
	if *byteFloor {
		n, size, err := listBytes(ctx, cs, *selector, *page, *table, metav1.IncludeObjectPolicy(*include))
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bytes: %d\npods: %d\n", size, n)
		return nil
	}
	var n int
	if *watchList {
		n, err = streamPods(ctx, cs, *selector)
	} else {
		n, err = listPods(ctx, cs, *selector, *page)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "pods: %d\n", n)
	return nil
}

func listPods(ctx context.Context, cs kubernetes.Interface, selector string, page int64) (int, error) {
	n := 0
	opts := metav1.ListOptions{LabelSelector: selector, Limit: page}
	for {
		list, err := cs.CoreV1().Pods("").List(ctx, opts)
		if err != nil {
			return n, fmt.Errorf("list pods: %w", err)
		}
		n += len(list.Items)
		if list.Continue == "" {
			return n, nil
		}
		opts.Continue = list.Continue
	}
}

// bookmarkWait bounds the wait for the initial-events-end bookmark once
// the stream has gone quiet: a server that ignores sendInitialEvents sends
// the pods as a plain watch would and never that bookmark.
const bookmarkWait = 20 * time.Second

// streamPods reads every pod as the initial events of a watch, as an
// informer with WatchListClient does, and stops at the bookmark that ends
// them.
func streamPods(ctx context.Context, cs kubernetes.Interface, selector string) (int, error) {
	yes := true
	w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{
		LabelSelector:        selector,
		SendInitialEvents:    &yes,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
	})
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		return 0, fmt.Errorf("%w: %w", errUnsupported, err)
	}
	if err != nil {
		return 0, fmt.Errorf("watch pods: %w", err)
	}
	defer w.Stop()
	n := 0
	quiet := time.NewTimer(bookmarkWait)
	defer quiet.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return n, fmt.Errorf("watch ended after %d pods, before the initial-events-end bookmark", n)
			}
			quiet.Reset(bookmarkWait)
			done, err := initialEvent(ev)
			if err != nil || done {
				return n, err
			}
			if ev.Type == watch.Added {
				n++
			}
		case <-quiet.C:
			return n, fmt.Errorf("%w: no initial-events-end bookmark within %s after %d pods", errUnsupported, bookmarkWait, n)
		}
	}
}

// initialEvent says whether ev ends the initial events.
func initialEvent(ev watch.Event) (bool, error) {
	switch ev.Type {
	case watch.Error:
		err := apierrors.FromObject(ev.Object)
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			return false, fmt.Errorf("%w: %w", errUnsupported, err)
		}
		return false, fmt.Errorf("watch pods: %w", err)
	case watch.Bookmark:
		pod, ok := ev.Object.(*corev1.Pod)
		return ok && pod.Annotations[metav1.InitialEventsAnnotationKey] == "true", nil
	}
	return false, nil
}

// changeLine is what the churn's floor prints of an event: enough for the
// bench to tell which state of which pod it saw, and when.
type changeLine struct {
	Type   watch.EventType `json:"type"`
	Object struct {
		Metadata struct {
			Name            string            `json:"name"`
			Namespace       string            `json:"namespace"`
			ResourceVersion string            `json:"resourceVersion"`
			Annotations     map[string]string `json:"annotations,omitempty"`
		} `json:"metadata"`
	} `json:"object"`
}

// watchPods prints a line per change of the pods from now on, until ctx
// ends or a watch fails: the least a client-go program does
// to say which pod changed. It asks for one pod only to learn where "now"
// is in the store, as a watch from the list's resourceVersion needs.
func watchPods(ctx context.Context, cs kubernetes.Interface, selector string, out io.Writer) error {
	pods := cs.CoreV1().Pods("")
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector, Limit: 1})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	bw := bufio.NewWriter(out)
	enc := json.NewEncoder(bw)
	events, rv := 0, list.ResourceVersion
	// The server ends a watch it finds too slow (a loaded machine) or too
	// old; a client goes on from the last event it saw, as the churn's
	// other clients (informers) do.
	for ctx.Err() == nil {
		var err error
		if rv, err = watchFrom(ctx, pods, selector, rv, enc, bw, &events); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// watchFrom prints the events of one watch from rv until the server ends
// it, and returns the last resourceVersion seen.
func watchFrom(ctx context.Context, pods corev1client.PodInterface, selector, rv string, enc *json.Encoder, bw *bufio.Writer, events *int) (string, error) {
	w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: rv, AllowWatchBookmarks: true})
	if err != nil {
		return rv, fmt.Errorf("watch pods after %d events: %w", *events, err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			return rv, fmt.Errorf("watch pods after %d events: %w", *events, apierrors.FromObject(ev.Object))
		}
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return rv, fmt.Errorf("watch pods: a %s event of a %T", ev.Type, ev.Object)
		}
		rv = pod.ResourceVersion
		if ev.Type == watch.Bookmark {
			continue
		}
		*events++
		var line changeLine
		line.Type, line.Object.Metadata.Name, line.Object.Metadata.Namespace = ev.Type, pod.Name, pod.Namespace
		line.Object.Metadata.ResourceVersion, line.Object.Metadata.Annotations = pod.ResourceVersion, pod.Annotations
		if err := enc.Encode(&line); err != nil {
			return rv, fmt.Errorf("print: %w", err)
		}
		if err := bw.Flush(); err != nil {
			return rv, fmt.Errorf("print: %w", err)
		}
	}
	return rv, nil
}
