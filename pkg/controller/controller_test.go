package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/source"
)

func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: rv, UID: types.UID("uid-" + name + "-" + rv),
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "test"}}}}
}

// recorder collects messages; gate, when set, blocks the handler until
// released, so events pile up for keys not yet taken.
type recorder struct {
	mu   sync.Mutex
	msgs []Message
	gate chan struct{}
	fail func(Message) error
}

func (r *recorder) handle(ctx context.Context, msgs []Message) error {
	if r.gate != nil {
		select {
		case <-r.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, m := range msgs {
		if r.fail != nil {
			if err := r.fail(m); err != nil {
				return err
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, msgs...)
	return nil
}

func (r *recorder) snapshot() []Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Message(nil), r.msgs...)
}

func (r *recorder) waitFor(t *testing.T, n int) []Message {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if msgs := r.snapshot(); len(msgs) >= n {
			return msgs
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("got %d messages, want %d: %v", len(r.snapshot()), n, describe(r.snapshot()))
	return nil
}

func describe(msgs []Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, fmt.Sprintf("%s %s rv=%s", m.Kind, m.Key, m.Row.Pod.ResourceVersion))
	}
	return out
}

type fixture struct {
	client *fake.Clientset
	rec    *recorder
	ctrl   *Controller
	drops  chan string
	cancel context.CancelFunc
	done   chan struct{}
}

func start(t *testing.T, workers, retries int, rec *recorder, initial ...*corev1.Pod) *fixture {
	t.Helper()
	var objs []runtime.Object
	for _, p := range initial {
		objs = append(objs, p)
	}
	f := &fixture{client: fake.NewClientset(objs...), rec: rec, drops: make(chan string, 10), done: make(chan struct{})}
	ctrl, err := New(Options{
		ListerWatcher: &source.Objects{Client: f.client, Filter: source.Filter{Namespace: "ns"}},
		Handler:       rec.handle,
		Workers:       workers,
		MaxRetries:    retries,
		RateLimiter:   workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond),
		OnDrop:        func(key string, err error) { f.drops <- key + ": " + err.Error() },
	})
	if err != nil {
		t.Fatal(err)
	}
	f.ctrl = ctrl
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	go func() { defer close(f.done); _ = ctrl.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-f.done })
	return f
}

func (f *fixture) create(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if _, err := f.client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) update(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if _, err := f.client.CoreV1().Pods(p.Namespace).Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) delete(t *testing.T, name string) {
	t.Helper()
	if err := f.client.CoreV1().Pods("ns").Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitCached waits until the cache shows pod name at resourceVersion rv
// ("" for absent), so a test knows the informer has seen its write.
func (f *fixture) waitCached(t *testing.T, name, rv string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		obj, ok, _ := f.ctrl.Indexer().GetByKey("ns/" + name)
		if (!ok && rv == "") || (ok && obj.(*source.PodRow).Pod.ResourceVersion == rv) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("cache never showed %s at rv %q", name, rv)
}

func TestInitialListIsSyncThenAddUpdateGone(t *testing.T) {
	rec := &recorder{}
	f := start(t, 1, 5, rec, pod("a", "1"), pod("b", "1"))
	msgs := rec.waitFor(t, 2)
	for _, m := range msgs {
		if m.Kind != Sync {
			t.Errorf("initial pod %s: got %s, want SYNC", m.Key, m.Kind)
		}
		if m.Row.Pod.ManagedFields != nil {
			t.Errorf("managedFields reached the handler for %s", m.Key)
		}
	}
	select {
	case <-f.ctrl.InitialDone():
	case <-time.After(5 * time.Second):
		t.Fatal("InitialDone never closed after the initial list was handled")
	}
	f.create(t, pod("c", "2"))
	msgs = rec.waitFor(t, 3)
	f.update(t, pod("c", "3"))
	msgs = rec.waitFor(t, 4)
	f.delete(t, "c")
	msgs = rec.waitFor(t, 5)
	got := describe(msgs[2:])
	want := []string{"ADD ns/c rv=2", "UPDATE ns/c rv=3", "GONE ns/c rv=3"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// While the only worker is held on one key, changes to other keys fold.
func TestCoalescingWhileWorkerBusy(t *testing.T) {
	rec := &recorder{gate: make(chan struct{})}
	f := start(t, 1, 5, rec, pod("busy", "1"))
	// The worker now waits in the handler for "busy"; queue more work.
	time.Sleep(50 * time.Millisecond)
	f.create(t, pod("x", "2"))
	f.waitCached(t, "x", "2")
	f.update(t, pod("x", "3"))
	f.update(t, pod("x", "4"))
	f.waitCached(t, "x", "4")
	f.create(t, pod("y", "5"))
	f.waitCached(t, "y", "5")
	f.delete(t, "y")
	f.waitCached(t, "y", "")
	close(rec.gate)
	msgs := rec.waitFor(t, 3)
	time.Sleep(100 * time.Millisecond)
	got := describe(rec.snapshot())
	want := []string{"SYNC ns/busy rv=1", "ADD ns/x rv=4", "GONE ns/y rv=5"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v (%d messages)", got, want, len(msgs))
	}
}

// A pod deleted and created again under the same name before a worker
// takes the key is reported as GONE (old) then ADD (new).
func TestRecreatedBeforeProcessing(t *testing.T) {
	rec := &recorder{gate: make(chan struct{})}
	f := start(t, 1, 5, rec, pod("busy", "1"), pod("r", "1"))
	time.Sleep(50 * time.Millisecond)
	f.delete(t, "r")
	f.waitCached(t, "r", "")
	f.create(t, pod("r", "7"))
	f.waitCached(t, "r", "7")
	close(rec.gate)
	rec.waitFor(t, 3)
	time.Sleep(100 * time.Millisecond)
	got := describe(rec.snapshot())
	want := []string{"SYNC ns/busy rv=1", "GONE ns/r rv=1", "ADD ns/r rv=7"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestRetryThenDrop(t *testing.T) {
	var calls atomic.Int32
	rec := &recorder{fail: func(m Message) error {
		if m.Key == "ns/bad" {
			calls.Add(1)
			return errors.New("printer broke")
		}
		return nil
	}}
	f := start(t, 1, 3, rec, pod("bad", "1"), pod("good", "1"))
	select {
	case d := <-f.drops:
		if want := "ns/bad: dropped after 3 failed attempts: printer broke"; d != want {
			t.Errorf("drop error %q, want %q", d, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the failing key was never dropped")
	}
	time.Sleep(50 * time.Millisecond)
	if n := calls.Load(); n != 3 {
		t.Errorf("handler tried the failing key %d times, want 3", n)
	}
	if got := describe(rec.snapshot()); fmt.Sprint(got) != "[SYNC ns/good rv=1]" {
		t.Errorf("messages %v, want only the good pod", got)
	}
	if n := f.ctrl.queue.NumRequeues("ns/bad"); n != 0 {
		t.Errorf("retry history of a dropped key: %d, want forgotten", n)
	}
	select {
	case <-f.ctrl.InitialDone():
	case <-time.After(time.Second):
		t.Error("a dropped initial key kept the initial list from finishing")
	}
}

// A key that fails once and then succeeds is retried and its history forgotten.
func TestRetrySucceeds(t *testing.T) {
	var calls atomic.Int32
	rec := &recorder{fail: func(Message) error {
		if calls.Add(1) == 1 {
			return errors.New("once")
		}
		return nil
	}}
	f := start(t, 1, 5, rec, pod("flaky", "1"))
	msgs := rec.waitFor(t, 1)
	if msgs[0].Kind != Sync {
		t.Errorf("retried initial pod came out as %s, want SYNC", msgs[0].Kind)
	}
	time.Sleep(20 * time.Millisecond)
	if n := f.ctrl.queue.NumRequeues("ns/flaky"); n != 0 {
		t.Errorf("requeues after success: %d, want 0", n)
	}
}

func TestNeverTwoWorkersOnOneKey(t *testing.T) {
	var inFlight, maxSeen atomic.Int32
	rec := &recorder{fail: func(Message) error {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := maxSeen.Load()
			if n <= m || maxSeen.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
		return nil
	}}
	f := start(t, 4, 5, rec, pod("hot", "1"))
	rec.waitFor(t, 1)
	for i := 2; i < 60; i++ {
		f.update(t, pod("hot", fmt.Sprint(i)))
	}
	f.waitCached(t, "hot", "59")
	time.Sleep(100 * time.Millisecond)
	if m := maxSeen.Load(); m != 1 {
		t.Fatalf("one key was handled by %d workers at once", m)
	}
	msgs := rec.snapshot()
	if last := msgs[len(msgs)-1]; last.Row.Pod.ResourceVersion != "59" {
		t.Errorf("last message shows rv %s, want the newest, 59", last.Row.Pod.ResourceVersion)
	}
}

func TestResyncAndTombstones(t *testing.T) {
	c, err := New(Options{ListerWatcher: &source.Objects{Client: fake.NewClientset()}, Handler: (&recorder{}).handle, Workers: 1, MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	row := &source.PodRow{Pod: pod("p", "5")}
	c.onUpdate(row, &source.PodRow{Pod: pod("p", "5")})
	if len(c.pending) != 0 {
		t.Fatalf("an update with the same resourceVersion queued %v", c.pending)
	}
	c.onDelete(cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: row})
	p := c.pending["ns/p"]
	if p == nil || p.kind != Gone || p.last != row {
		t.Fatalf("tombstone gave %+v, want GONE with the last state", p)
	}
}

func TestMerge(t *testing.T) {
	a, b := &source.PodRow{}, &source.PodRow{}
	cases := []struct {
		name         string
		older, newer *pending
		kind         Kind
		gone         int
		last         *source.PodRow
	}{
		{"sync then update stays sync", &pending{kind: Sync}, &pending{kind: Update}, Sync, 0, nil},
		{"add then update stays add", &pending{kind: Add}, &pending{kind: Update}, Add, 0, nil},
		{"add then gone is gone", &pending{kind: Add}, &pending{kind: Gone, last: a}, Gone, 0, a},
		{"gone then add keeps the old pod", &pending{kind: Gone, last: a}, &pending{kind: Add}, Add, 1, nil},
		{"gone, add, gone", &pending{kind: Add, gone: []*source.PodRow{a}}, &pending{kind: Gone, last: b}, Gone, 1, b},
	}
	for _, tc := range cases {
		got := merge(tc.older, tc.newer)
		if got.kind != tc.kind || len(got.gone) != tc.gone || got.last != tc.last {
			t.Errorf("%s: got %+v", tc.name, got)
		}
	}
}

// BenchmarkUpdateToMessage is the controller's own cost for one pod update:
// the informer's handler records it, a worker takes the key, reads the
// cache and hands the message on.
func BenchmarkUpdateToMessage(b *testing.B) {
	updates := 0
	handler := func(_ context.Context, msgs []Message) error {
		if len(msgs) == 1 && msgs[0].Kind == Update {
			updates++
		}
		return nil
	}
	c, err := New(Options{ListerWatcher: &source.Objects{Client: fake.NewClientset()}, Handler: handler, Workers: 1, MaxRetries: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer c.queue.ShutDown()
	rows := []*source.PodRow{{Pod: pod("p", "1")}, {Pod: pod("p", "2")}}
	if err := c.indexer.Add(rows[0]); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		c.onUpdate(rows[i%2], rows[(i+1)%2])
		c.processNext(ctx)
	}
	b.StopTimer()
	if updates != b.N {
		b.Fatalf("%d UPDATE messages for %d updates", updates, b.N)
	}
}
