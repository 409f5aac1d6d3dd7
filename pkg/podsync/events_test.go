package podsync

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

func podEvent(uid types.UID, objUID types.UID, reason string, count int32) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{UID: objUID, Name: "web-1." + string(objUID)},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web-1", UID: uid},
		Type:           "Warning", Reason: reason, Message: reason + " message", Count: count,
	}
}

func podMessage(kind message.Type, uid types.UID) message.Message {
	row := wire.RowOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", UID: uid}})
	return message.Message{Type: kind, Key: cache.ObjectName{Namespace: "shop", Name: "web-1"}, Row: row}
}

// Events of a pod not shown yet wait for it; repeats fold by count,
// across Event objects; Events of an earlier pod of the same name are
// dropped; a gone pod forgets its Events.
func TestEventJoin(t *testing.T) {
	j := newEventJoin()
	if got := j.take(podEvent("p1", "e1", "Scheduled", 1)); got != nil {
		t.Fatalf("an Event of a pod not shown was printed: %+v", got)
	}
	held := j.podShown(podMessage(message.Add, "p1"))
	if len(held) != 1 || held[0].Reason != "Scheduled" {
		t.Fatalf("held Events = %+v", held)
	}
	if got := j.take(held[0]); got == nil || got.Count != 1 {
		t.Fatalf("held Event taken = %+v", got)
	}
	if got := j.take(podEvent("p1", "e2", "BackOff", 2)); got == nil || got.Count != 2 {
		t.Errorf("BackOff x2 = %+v", got)
	}
	if got := j.take(podEvent("p1", "e2", "BackOff", 2)); got != nil {
		t.Errorf("the same count again was printed: %+v", got)
	}
	// Another Event object saying the same thing adds its count.
	if got := j.take(podEvent("p1", "e3", "BackOff", 1)); got == nil || got.Count != 3 {
		t.Errorf("folded BackOff = %+v, want count 3", got)
	}
	if got := j.take(podEvent("p0", "e4", "BackOff", 9)); got != nil {
		t.Errorf("an Event of an earlier pod of the name was printed: %+v", got)
	}
	j.podShown(podMessage(message.Gone, "p1"))
	if len(j.folds) != 0 || len(j.shown) != 0 {
		t.Errorf("a gone pod left state: %d folds, %d shown", len(j.folds), len(j.shown))
	}
}

func TestEventJoinHoldsBounded(t *testing.T) {
	j := newEventJoin()
	for i := range maxHeldPerPod + 10 {
		j.take(podEvent("p1", types.UID(rune('a'+i)), "Scheduled", 1))
	}
	if n := len(j.held["shop/web-1"]); n != maxHeldPerPod {
		t.Errorf("%d Events held, want %d", n, maxHeldPerPod)
	}
}
