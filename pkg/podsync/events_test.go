package podsync

import (
	"fmt"
	"slices"
	"testing"
	"time"

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

// The Events' store keeps counts, not Events: news is an Event not seen
// before (in the initial list, only one newer than the start) or one whose
// count grew; what the server deleted, or no longer lists, is forgotten.
func TestEventCounts(t *testing.T) {
	start := time.Now()
	var sent []string
	c := newEventCounts(start, func(ev *corev1.Event) { sent = append(sent, fmt.Sprintf("%s:%d", ev.Name, ev.Count)) })
	at := func(ev *corev1.Event, when time.Time) *corev1.Event {
		ev.LastTimestamp = metav1.NewTime(when)
		return ev
	}
	old := at(podEvent("p1", "e1", "Scheduled", 1), start.Add(-time.Hour))
	fresh := at(podEvent("p1", "e2", "BackOff", 1), start.Add(time.Second))
	_ = c.Replace([]any{old, fresh}, "1")
	_ = c.Update(at(podEvent("p1", "e2", "BackOff", 1), start.Add(time.Second)))
	_ = c.Update(at(podEvent("p1", "e2", "BackOff", 3), start.Add(2*time.Second)))
	_ = c.Add(at(podEvent("p1", "e3", "Pulled", 1), start.Add(-time.Hour)))
	_ = c.Delete(old)
	// A relist: e2 as it was, e3 gone, e1 deleted before and listed again.
	_ = c.Replace([]any{at(podEvent("p1", "e2", "BackOff", 3), start), at(podEvent("p1", "e1", "Scheduled", 1), start.Add(-time.Hour))}, "2")
	want := []string{"web-1.e2:1", "web-1.e2:3", "web-1.e3:1", "web-1.e1:1"}
	if !slices.Equal(sent, want) {
		t.Errorf("sent %v, want %v", sent, want)
	}
	if len(c.counts) != 2 {
		t.Errorf("%d counts kept, want 2 (the Events listed last)", len(c.counts))
	}
	if fresh.ManagedFields != nil {
		t.Error("managedFields were sent")
	}
}

// Events held for a pod that is never shown do not stay: they are dropped
// once held longer than heldEventsKept.
func TestEventJoinDropsStaleHeld(t *testing.T) {
	j := newEventJoin()
	j.take(podEvent("p1", "e1", "Scheduled", 1))
	j.held["shop/web-1"][0].at = time.Now().Add(-2 * heldEventsKept)
	j.pruned = time.Time{}
	ev := podEvent("p2", "e2", "Scheduled", 1)
	ev.InvolvedObject.Name = "web-2"
	j.take(ev)
	if _, ok := j.held["shop/web-1"]; ok || len(j.held) != 1 {
		t.Errorf("held after pruning: %v", j.held)
	}
}
