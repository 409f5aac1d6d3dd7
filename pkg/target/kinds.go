package target

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	appsclient "k8s.io/client-go/kubernetes/typed/apps/v1"
	batchclient "k8s.io/client-go/kubernetes/typed/batch/v1"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// Kind is one built-in kind a target can be: everything the parsing of
// TYPE/NAME, the watching, the ownership of pods and the judging need to
// know of it. Adding a kind is adding a row to kinds.
type Kind struct {
	// Group and Kind, as the API names them.
	schema.GroupKind
	// Names are the names kubectl accepts for the kind: singular,
	// plural (its resource), then the short ones.
	Names []string
	// Client lists and watches the kind's objects; its Object is nil for
	// Pod, whose pod is its object and needs no informer of its own.
	Client Client
	// Selector is the pod selector of one of its objects; false for an
	// object of another type.
	Selector func(runtime.Object) (*metav1.LabelSelector, bool)
	// Judge is the kind's rollout rule (package check) over one of its
	// objects.
	Judge func(runtime.Object) check.TargetStatus
	// Via is the kind of the objects it makes its pods through, whose
	// controller reference names it (a Deployment's ReplicaSets); empty
	// when its pods' controller reference names it directly.
	Via string
	// Revisions is the kind's revision rule: which of its pods belong to
	// a revision being replaced. The zero rule: none do.
	Revisions Revisions
}

// Revisions tells a kind's pods of the revision being replaced from those
// of the revision it rolls out.
type Revisions struct {
	// Of reads what an object says of its revisions.
	Of func(runtime.Object) Revision
	// History: the revision rolled out is the one of the kind's newest
	// ControllerRevision (a DaemonSet), not one its status names.
	History bool
	// Template is the object's pod template: the pods of its Via objects
	// with another template are being replaced (a Deployment's older
	// ReplicaSets).
	Template func(runtime.Object) *corev1.PodTemplateSpec
}

// Revision is what a workload's object says of its revisions.
type Revision struct {
	// OnDelete: its controller replaces a pod only when someone deletes
	// it, so no pod is being replaced.
	OnDelete bool
	// Settling: its controller has not acted on its newest spec yet, so
	// every pod may be on its way out.
	Settling bool
	// Current is the revision hash (label controller-revision-hash) its
	// pods move to, where its status names it.
	Current string
}

// kinds is the one table of the built-in kinds a target can be.
var kinds = []Kind{
	{
		GroupKind: schema.GroupKind{Group: appsv1.GroupName, Kind: check.TargetDeployment},
		Names:     []string{"deployment", "deployments", "deploy"},
		Client: ClientOf[*appsv1.DeploymentList](&appsv1.Deployment{},
			func(c kubernetes.Interface, ns string) appsclient.DeploymentInterface {
				return c.AppsV1().Deployments(ns)
			}),
		Selector:  selector(func(o *appsv1.Deployment) *metav1.LabelSelector { return o.Spec.Selector }),
		Judge:     judge(check.DeploymentRollout),
		Via:       check.TargetReplicaSet,
		Revisions: Revisions{Template: template(func(o *appsv1.Deployment) *corev1.PodTemplateSpec { return &o.Spec.Template })},
	},
	{
		GroupKind: schema.GroupKind{Group: appsv1.GroupName, Kind: check.TargetStatefulSet},
		Names:     []string{"statefulset", "statefulsets", "sts"},
		Client: ClientOf[*appsv1.StatefulSetList](&appsv1.StatefulSet{},
			func(c kubernetes.Interface, ns string) appsclient.StatefulSetInterface {
				return c.AppsV1().StatefulSets(ns)
			}),
		Selector: selector(func(o *appsv1.StatefulSet) *metav1.LabelSelector { return o.Spec.Selector }),
		Judge:    judge(check.StatefulSetRollout),
		Revisions: Revisions{Of: revision(func(o *appsv1.StatefulSet) Revision {
			return Revision{
				OnDelete: o.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType,
				Settling: o.Status.ObservedGeneration == 0 || o.Generation > o.Status.ObservedGeneration,
				Current:  o.Status.UpdateRevision,
			}
		})},
	},
	{
		GroupKind: schema.GroupKind{Group: appsv1.GroupName, Kind: check.TargetDaemonSet},
		Names:     []string{"daemonset", "daemonsets", "ds"},
		Client: ClientOf[*appsv1.DaemonSetList](&appsv1.DaemonSet{},
			func(c kubernetes.Interface, ns string) appsclient.DaemonSetInterface {
				return c.AppsV1().DaemonSets(ns)
			}),
		Selector: selector(func(o *appsv1.DaemonSet) *metav1.LabelSelector { return o.Spec.Selector }),
		Judge:    judge(check.DaemonSetRollout),
		Revisions: Revisions{History: true, Of: revision(func(o *appsv1.DaemonSet) Revision {
			return Revision{
				OnDelete: o.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType,
				Settling: o.Generation > o.Status.ObservedGeneration,
			}
		})},
	},
	{
		GroupKind: schema.GroupKind{Group: batchv1.GroupName, Kind: check.TargetJob},
		Names:     []string{"job", "jobs"},
		Client: ClientOf[*batchv1.JobList](&batchv1.Job{},
			func(c kubernetes.Interface, ns string) batchclient.JobInterface { return c.BatchV1().Jobs(ns) }),
		Selector: selector(func(o *batchv1.Job) *metav1.LabelSelector { return o.Spec.Selector }),
		Judge:    judge(check.JobRollout),
	},
	{
		// A CronJob makes its pods through Jobs; its selector is the one
		// of its Jobs' template, mostly none (the Job controller makes it).
		GroupKind: schema.GroupKind{Group: batchv1.GroupName, Kind: check.TargetCronJob},
		Names:     []string{"cronjob", "cronjobs", "cj"},
		Client: ClientOf[*batchv1.CronJobList](&batchv1.CronJob{},
			func(c kubernetes.Interface, ns string) batchclient.CronJobInterface { return c.BatchV1().CronJobs(ns) }),
		Selector: selector(func(o *batchv1.CronJob) *metav1.LabelSelector { return o.Spec.JobTemplate.Spec.Selector }),
		Judge:    judge(check.CronJobStatus),
		Via:      check.TargetJob,
	},
	{
		GroupKind: schema.GroupKind{Group: appsv1.GroupName, Kind: check.TargetReplicaSet},
		Names:     []string{"replicaset", "replicasets", "rs"},
		Client: ClientOf[*appsv1.ReplicaSetList](&appsv1.ReplicaSet{},
			func(c kubernetes.Interface, ns string) appsclient.ReplicaSetInterface {
				return c.AppsV1().ReplicaSets(ns)
			}),
		Selector: selector(func(o *appsv1.ReplicaSet) *metav1.LabelSelector { return o.Spec.Selector }),
		Judge:    judge(check.ReplicaSetRollout),
	},
	{
		// A Pod target is judged by its pod, as any pod: no informer, no
		// selector, no rule of its own.
		GroupKind: schema.GroupKind{Kind: check.TargetPod},
		Names:     []string{"pod", "pods", "po"},
	},
}

// Lookup is the row of a kind ("Deployment"), and false for a kind that
// is not built in.
func Lookup(kind string) (Kind, bool) {
	for _, k := range kinds {
		if k.Kind == kind {
			return k, true
		}
	}
	return Kind{}, false
}

// Workloads are the kinds that make pods, each with an informer: every
// kind but Pod, in the table's order.
func Workloads() []Kind {
	var out []Kind
	for _, k := range kinds {
		if k.Client.Object != nil {
			out = append(out, k)
		}
	}
	return out
}

// Resource is the kind's API resource (all are served at v1).
func (k Kind) Resource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: k.Group, Version: "v1", Resource: k.Names[1]}
}

// Judge is the rollout rule of kind over obj, nil being an object that
// does not exist (yet). The object is only read.
func Judge(kind string, obj runtime.Object) check.TargetStatus {
	if obj == nil {
		return check.TargetStatus{State: check.Pending, Message: "does not exist (yet)"}
	}
	k, ok := Lookup(kind)
	if !ok || k.Judge == nil {
		return noRule(obj)
	}
	return k.Judge(obj)
}

func noRule(obj runtime.Object) check.TargetStatus {
	return check.TargetStatus{State: check.Pending, Message: fmt.Sprintf("%T has no rollout rule", obj)}
}

// judge makes a kind's typed rollout rule a row's Judge.
func judge[T runtime.Object](rule func(T) check.TargetStatus) func(runtime.Object) check.TargetStatus {
	return func(obj runtime.Object) check.TargetStatus {
		o, ok := obj.(T)
		if !ok {
			return noRule(obj)
		}
		return rule(o)
	}
}

// selector makes a kind's typed selector field a row's Selector.
func selector[T runtime.Object](field func(T) *metav1.LabelSelector) func(runtime.Object) (*metav1.LabelSelector, bool) {
	return func(obj runtime.Object) (*metav1.LabelSelector, bool) {
		o, ok := obj.(T)
		if !ok {
			return nil, false
		}
		return field(o), true
	}
}

// revision makes a kind's typed revision reading a rule's Of; an object of
// another type says nothing.
func revision[T runtime.Object](read func(T) Revision) func(runtime.Object) Revision {
	return func(obj runtime.Object) Revision {
		o, ok := obj.(T)
		if !ok {
			return Revision{}
		}
		return read(o)
	}
}

// template makes a kind's typed pod template field a rule's Template; nil
// for an object of another type.
func template[T runtime.Object](field func(T) *corev1.PodTemplateSpec) func(runtime.Object) *corev1.PodTemplateSpec {
	return func(obj runtime.Object) *corev1.PodTemplateSpec {
		o, ok := obj.(T)
		if !ok {
			return nil
		}
		return field(o)
	}
}

// Client lists and watches one kind of object in a namespace.
type Client struct {
	// Object is an empty object of the kind: the informer's type.
	Object runtime.Object
	List   func(ctx context.Context, c kubernetes.Interface, ns string, o metav1.ListOptions) (runtime.Object, error)
	Watch  func(ctx context.Context, c kubernetes.Interface, ns string, o metav1.ListOptions) (watch.Interface, error)
}

// listed keeps a failed typed list from looking like a list: a nil
// pointer inside an interface is not a nil interface.
func listed[L runtime.Object](l L, err error) (runtime.Object, error) {
	if err != nil {
		return nil, err
	}
	return l, nil
}

// typedClient is what each typed client of a kind offers, L being its list
// type.
type typedClient[L runtime.Object] interface {
	List(ctx context.Context, o metav1.ListOptions) (L, error)
	Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error)
}

// ClientOf is a kind's Client, from its typed client.
func ClientOf[L runtime.Object, C typedClient[L]](obj runtime.Object, client func(kubernetes.Interface, string) C) Client {
	return Client{
		Object: obj,
		List: func(ctx context.Context, c kubernetes.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return listed(client(c, ns).List(ctx, o))
		},
		Watch: func(ctx context.Context, c kubernetes.Interface, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return client(c, ns).Watch(ctx, o)
		},
	}
}
