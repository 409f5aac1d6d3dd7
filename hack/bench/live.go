package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// A live cluster's pods are written all the time; the bench's cluster is
// idle once loaded. The API server serves the pages after a list's first
// from a snapshot of its watch cache, which it takes on each write and
// drops once etcd's history is compacted past it (every 5 minutes): on an
// idle cluster those pages come from etcd, at a cost that grows with the
// cluster's age. With -live one pod is written before each measured run,
// so that every client is served as on a cluster whose pods change.

// liveAnnotation is the annotation the bench writes on one pod.
const liveAnnotation = "bench.podsync.io/written"

// toucher writes one pod of the cluster, found on its first write.
type toucher struct {
	cs        kubernetes.Interface
	namespace string
	name      string
	writes    int
}

func (t *toucher) touch(ctx context.Context) error {
	if t.name == "" {
		list, err := t.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return fmt.Errorf("find a pod to write: %w", err)
		}
		if len(list.Items) == 0 {
			return errors.New("find a pod to write: the cluster has none")
		}
		t.namespace, t.name = list.Items[0].Namespace, list.Items[0].Name
	}
	t.writes++
	return annotatePod(ctx, t.cs, t.namespace, t.name, liveAnnotation, strconv.Itoa(t.writes))
}

// annotatePod sets one annotation of a pod.
func annotatePod(ctx context.Context, cs kubernetes.Interface, namespace, name, key, value string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	_, err := cs.CoreV1().Pods(namespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: fieldManager})
	if err != nil {
		return fmt.Errorf("write pod %s/%s: %w", namespace, name, err)
	}
	return nil
}
