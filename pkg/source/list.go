package source

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// PodRowList is what the source's List returns to the reflector.
type PodRowList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []wire.PodRow
}

// DeepCopyObject copies every row.
func (l *PodRowList) DeepCopyObject() runtime.Object {
	out := &PodRowList{TypeMeta: l.TypeMeta}
	l.DeepCopyInto(&out.ListMeta)
	out.Items = make([]wire.PodRow, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*wire.PodRow)
	}
	return out
}

// stripManagedFields drops the managedFields of a page just decoded, so
// that they can be freed while the next pages are read, rather than after
// the whole list has reached the informer's transform.
func stripManagedFields(pods *corev1.PodList) {
	for i := range pods.Items {
		pods.Items[i].ManagedFields = nil
	}
}
