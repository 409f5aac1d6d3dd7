//go:build unix

package localcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// CrashLogs is the component name of the crash-log keeper when it runs as
// a process of its own (Options.CrashLogsCommand).
const CrashLogs = "crash-logs"

// KeepCrashLogs gives every pod in StateCrashLoop, now and later, the log
// CrashLoopLog (for each of its containers) until ctx ends.
//
// It exists because kwok cannot pick logs by annotation: a ClusterLogs
// object selects pods only by namespace and exact name (its selector has
// matchNamespaces and matchNames, nothing else), and the pods of a
// crash-looping Deployment have generated names. So this watches pod
// metadata (cheap: no specs or statuses) and applies a Logs object per
// crash-looping pod, owned by the pod. A pod whose SetLogs fails is tried
// again on its next update, which the crash-loop stage makes every few
// seconds.
func (c *Cluster) KeepCrashLogs(ctx context.Context) error {
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("crash logs: metadata client: %w", err)
	}
	factory := metadatainformer.NewSharedInformerFactory(mc, 0)
	inf := factory.ForResource(corev1.SchemeGroupVersion.WithResource("pods")).Informer()
	// Only names and annotations are needed; managed fields are most of the
	// metadata's size.
	if err := inf.SetTransform(func(obj any) (any, error) {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
			m.ManagedFields = nil
		}
		return obj, nil
	}); err != nil {
		return fmt.Errorf("crash logs: %w", err)
	}
	// The handler runs on one goroutine, so done needs no lock.
	done := map[types.UID]bool{}
	handle := func(obj any) {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok || m.Annotations[StateAnnotation] != StateCrashLoop || done[m.UID] {
			return
		}
		logs := map[string]ContainerLog{AnyContainer: CrashLoopLog()}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := c.SetLogs(sctx, m.Namespace, m.Name, logs)
		cancel()
		if err != nil {
			c.logf("crash logs: %v (tried again on the pod's next update)", err)
			return
		}
		done[m.UID] = true
	}
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
		DeleteFunc: func(obj any) {
			if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
				delete(done, m.UID)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("crash logs: %w", err)
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
	return nil
}
