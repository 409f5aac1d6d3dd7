package check

import (
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A kubelet that evicts a pod (node pressure) or ends it for a graceful
// node shutdown leaves it in phase Failed, and it stays there, for days,
// until someone or the pod garbage collector deletes it. The ReplicaSet,
// StatefulSet and DaemonSet controllers count only active pods (their
// IsPodActive: not Succeeded, not Failed, not being deleted), so they
// create a replacement and their status, and `kubectl rollout status`,
// ignore the pod left behind. The check does as they do: such a pod is
// named once, and never judged. A Failed pod that no controller replaces
// (a bare pod, a Job's pod) keeps failing the check.

// replacingKinds are the kinds whose controllers replace a Failed pod.
var replacingKinds = map[string]bool{TargetReplicaSet: true, TargetStatefulSet: true, TargetDaemonSet: true}

// LeftBehindPod is a pod in phase Failed that its controller replaces.
type LeftBehindPod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Context is the kubeconfig context, in a run over several.
	Context string `json:"context,omitempty"`
	// Reason is the pod's own reason (Evicted, Terminated, ...), empty
	// when it gave none; Message is the pod's message.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// OwnerKind and OwnerName name the controller that replaces it.
	OwnerKind string `json:"ownerKind"`
	OwnerName string `json:"ownerName"`
}

// LeftBehindOf reports whether pod is left behind by its controller: its
// phase is Failed, it is not being deleted (then it is only on its way
// out), and its controller is an apps ReplicaSet, StatefulSet or
// DaemonSet. The pod is only read; nil is no pod.
func LeftBehindOf(pod *corev1.Pod) (LeftBehindPod, bool) {
	if pod == nil || pod.Status.Phase != corev1.PodFailed || pod.DeletionTimestamp != nil {
		return LeftBehindPod{}, false
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || !replacingKinds[ref.Kind] {
		return LeftBehindPod{}, false
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != appsv1.GroupName {
		return LeftBehindPod{}, false
	}
	return LeftBehindPod{
		Namespace: pod.Namespace, Name: pod.Name,
		Reason: pod.Status.Reason, Message: pod.Status.Message,
		OwnerKind: ref.Kind, OwnerName: ref.Name,
	}, true
}

// observeLeftBehind marks the pod left behind or not, and keeps it to be
// named (TakeLeftBehind) when it first is. A check that judges nothing
// names nothing, and --until gone waits for such pods like any other.
func (e *Evaluator) observeLeftBehind(key string, pod *corev1.Pod, st *podState) {
	lb, ok := LeftBehindOf(pod)
	was := st.left
	st.left = ok && !st.leaving && !e.gone && e.spec.Judges()
	if !st.left {
		return
	}
	e.left[key] = lb
	if !was {
		e.fresh = append(e.fresh, key)
	}
}

// TakeLeftBehind returns the pods that became left behind since its last
// call and still are, in the order they did: each is named once, when it
// is first seen so.
func (e *Evaluator) TakeLeftBehind() []LeftBehindPod {
	if len(e.fresh) == 0 {
		return nil
	}
	out := make([]LeftBehindPod, 0, len(e.fresh))
	for _, k := range e.fresh {
		if lb, ok := e.left[k]; ok {
			out = append(out, lb)
		}
	}
	e.fresh = e.fresh[:0]
	return out
}

// LeftBehind returns the pods left behind now, sorted by namespace and
// name. It costs O(n log n) of them: call it for the summary.
func (e *Evaluator) LeftBehind() []LeftBehindPod {
	out := make([]LeftBehindPod, 0, len(e.left))
	for _, lb := range e.left {
		out = append(out, lb)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}
