package podsync

import (
	"context"
	"fmt"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// rolloutCache watches the Deployments and ReplicaSets of the pods'
// namespace, as the Deployment controller does, so that a Deployment is
// confirmed the moment its last pod is judged, without a request after
// it: at thousands of Deployments two requests per namespace after the
// deciding change were most of the time to the verdict. Until both lists
// are in, or when they are refused, the rollouts are looked up instead.
type rolloutCache struct {
	deps, sets cache.SharedIndexInformer
	refused    atomic.Bool
	stop       context.CancelFunc
}

// byController indexes ReplicaSets by the UID of their controller.
const byController = "controller"

// watchRollouts starts watching the Deployments and ReplicaSets of
// namespace ("" for all); changed is called on each change.
func watchRollouts(ctx context.Context, kube kubernetes.Interface, namespace string, changed func()) (*rolloutCache, error) {
	ctx, stop := context.WithCancel(ctx)
	f := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(namespace), informers.WithTransform(slimRolloutObject))
	c := &rolloutCache{deps: f.Apps().V1().Deployments().Informer(), sets: f.Apps().V1().ReplicaSets().Informer(), stop: stop}
	err := c.sets.AddIndexers(cache.Indexers{byController: controllerUID})
	for _, inf := range []cache.SharedIndexInformer{c.deps, c.sets} {
		if err != nil {
			break
		}
		err = inf.SetWatchErrorHandler(c.watchFailed)
		if err == nil {
			_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    func(any) { changed() },
				UpdateFunc: func(any, any) { changed() },
				DeleteFunc: func(any) { changed() },
			})
		}
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("watch deployments and replicasets: %w", err)
	}
	f.Start(ctx.Done())
	return c, nil
}

// watchFailed gives the watch up when it is refused: the lookups then
// say so, once per Deployment, as without a watch. Other errors are
// retried by the reflector, and the lookups answer meanwhile.
func (c *rolloutCache) watchFailed(_ *cache.Reflector, err error) {
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsNotFound(err) {
		c.refused.Store(true)
		c.stop()
	}
}

// ready says the cache can answer: both lists are in, and not refused.
func (c *rolloutCache) ready() bool {
	return c != nil && !c.refused.Load() && c.deps.HasSynced() && c.sets.HasSynced()
}

// answer is what a lookup of the Deployment key would find now.
func (c *rolloutCache) answer(key string) lookedUp {
	obj, found, err := c.deps.GetIndexer().GetByKey(key)
	if err != nil {
		return lookedUp{err: fmt.Errorf("get deployment %s: %w", key, err)}
	}
	if !found {
		_, name, _ := cache.SplitMetaNamespaceKey(key)
		return lookedUp{err: fmt.Errorf("get deployment %s: %w", key, apierrors.NewNotFound(appsv1.Resource("deployments"), name))}
	}
	d := obj.(*appsv1.Deployment)
	objs, err := c.sets.GetIndexer().ByIndex(byController, string(d.UID))
	if err != nil {
		return lookedUp{err: fmt.Errorf("replicasets of deployment %s: %w", key, err)}
	}
	sets := make([]appsv1.ReplicaSet, 0, len(objs))
	for _, o := range objs {
		sets = append(sets, *o.(*appsv1.ReplicaSet))
	}
	return lookedUp{cur: currentOf(d, sets)}
}

func controllerUID(obj any) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("index replicaset: %w", err)
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

// slimRolloutObject drops what a confirmation never reads, before the
// object is cached: its managedFields and annotations (the pod
// template's own are kept: they are part of the template compared).
func slimRolloutObject(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
		m.SetAnnotations(nil)
	}
	return obj, nil
}
