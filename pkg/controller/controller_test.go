package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: rv, UID: types.UID("uid-" + name),
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "test"}}}}
}

// recorder collects messages; gate, when set, blocks delivery until
// released, so events pile up for keys not yet taken.
type recorder struct {
	mu   sync.Mutex
	msgs []message.Message
	gate chan struct{}
	// work, when set, is the controller's Work; keep its Keep.
	work Work
	keep Keep
}

func (r *recorder) deliver(ctx context.Context, msgs []message.Message) error {
	if r.gate != nil {
		select {
		case <-r.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, msgs...)
	return nil
}

func (r *recorder) snapshot() []message.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]message.Message(nil), r.msgs...)
}

func (r *recorder) waitFor(t *testing.T, n int) []message.Message {
	t.Helper()
	settle(t, func() bool { return len(r.snapshot()) >= n }, func() string {
		return fmt.Sprintf("got %d messages, want %d: %v", len(r.snapshot()), n, describe(r.snapshot()))
	})
	return r.snapshot()
}

// settle returns once cond holds with every goroutine of the bubble
// waiting. The bubble's clock moves on only while cond does not hold, for
// what waits on it: a rate limiter's delay, a worker's pause. It fails the
// test with why() if cond does not hold within ten seconds of that clock.
func settle(t *testing.T, cond func() bool, why func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for synctest.Wait(); !cond(); synctest.Wait() {
		if time.Now().After(deadline) {
			t.Fatal(why())
		}
		time.Sleep(time.Millisecond)
	}
}

func describe(msgs []message.Message) []string {
	var out []string
	for _, m := range msgs {
		rv := "?"
		if m.Row != nil {
			rv = m.Row.Meta().ResourceVersion
		}
		out = append(out, fmt.Sprintf("%s %s rv=%s", m.Type, m.Key, rv))
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
		ListerWatcher: source.Objects(f.client, f.client, nil, nil, source.Filter{Namespace: "ns"}, nil).ListerWatcher(nil),
		Deliver:       rec.deliver,
		Work:          rec.work,
		Keep:          rec.keep,
		Workers:       workers,
		MaxRetries:    retries,
		RateLimiter:   workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](time.Millisecond, 10*time.Millisecond),
		OnDrop:        func(key cache.ObjectName, err error) { f.drops <- key.String() + ": " + err.Error() },
	})
	if err != nil {
		t.Fatal(err)
	}
	f.ctrl = ctrl
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	go func() { defer close(f.done); _ = ctrl.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-f.done })
	f.waitWatching(t)
	return f
}

// waitWatching waits until the informer watches pods: the fake clientset's
// watch does not replay a change made between the list and the watch, so
// a test writing before then could lose its change under load.
func (f *fixture) waitWatching(t *testing.T) {
	t.Helper()
	settle(t, func() bool {
		return slices.ContainsFunc(f.client.Actions(), func(a k8stesting.Action) bool {
			return a.GetVerb() == "watch" && a.GetResource().Resource == "pods"
		})
	}, func() string { return "the informer did not watch pods within 10 s" })
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
	settle(t, func() bool {
		obj, ok, _ := f.ctrl.Indexer().GetByKey("ns/" + name) //nolint:errcheck // absent and error both mean not yet
		return (!ok && rv == "") || (ok && obj.(*wire.PodRow).Pod().ResourceVersion == rv)
	}, func() string { return fmt.Sprintf("cache never showed %s at rv %q", name, rv) })
}

func TestInitialListIsSyncThenAddUpdateGone(t *testing.T) {
	synctest.Test(t, testInitialListIsSyncThenAddUpdateGone)
}

func testInitialListIsSyncThenAddUpdateGone(t *testing.T) {
	rec := &recorder{}
	f := start(t, 1, 5, rec, pod("a", "1"), pod("b", "1"))
	msgs := rec.waitFor(t, 2)
	for _, m := range msgs {
		if m.Type != message.Sync {
			t.Errorf("initial pod %s: got %s, want SYNC", m.Key, m.Type)
		}
		if m.Row.Pod().ManagedFields != nil {
			t.Errorf("managedFields reached the handler for %s", m.Key)
		}
	}
	select {
	case <-f.ctrl.InitialDone():
	case <-time.After(5 * time.Second):
		t.Fatal("InitialDone never closed after the initial list was handled")
	}
	f.create(t, pod("c", "2"))
	rec.waitFor(t, 3)
	f.update(t, pod("c", "3"))
	rec.waitFor(t, 4)
	f.delete(t, "c")
	msgs = rec.waitFor(t, 5)
	got := describe(msgs[2:])
	want := []string{"ADD ns/c rv=2", "UPDATE ns/c rv=3", "GONE ns/c rv=3"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// While the only worker is held on one key, changes to other keys fold.
func TestCoalescingWhileWorkerBusy(t *testing.T) { synctest.Test(t, testCoalescingWhileWorkerBusy) }

func testCoalescingWhileWorkerBusy(t *testing.T) {
	rec := &recorder{gate: make(chan struct{})}
	f := start(t, 1, 5, rec, pod("busy", "1"))
	// Once every goroutine waits, the worker waits in the handler for
	// "busy"; queue more work.
	synctest.Wait()
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
	synctest.Wait() // nothing more is on its way
	got := describe(rec.snapshot())
	want := []string{"SYNC ns/busy rv=1", "ADD ns/x rv=4", "GONE ns/y rv=5"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v (%d messages)", got, want, len(msgs))
	}
}

// A pod deleted and created again under the same name before a worker
// takes the key is reported as GONE (old) then ADD (new).
func TestRecreatedBeforeProcessing(t *testing.T) { synctest.Test(t, testRecreatedBeforeProcessing) }

func testRecreatedBeforeProcessing(t *testing.T) {
	rec := &recorder{gate: make(chan struct{})}
	f := start(t, 1, 5, rec, pod("busy", "1"), pod("r", "1"))
	synctest.Wait() // the worker waits in the handler for "busy"
	f.delete(t, "r")
	f.waitCached(t, "r", "")
	f.create(t, pod("r", "7"))
	f.waitCached(t, "r", "7")
	close(rec.gate)
	rec.waitFor(t, 3)
	synctest.Wait() // nothing more is on its way
	got := describe(rec.snapshot())
	want := []string{"SYNC ns/busy rv=1", "GONE ns/r rv=1", "ADD ns/r rv=7"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// A key whose work keeps failing is retried with rate limiting and
// dropped after MaxRetries attempts; its messages are delivered once,
// never again on a retry, and the other keys go on.
func TestWorkRetriedThenDropped(t *testing.T) { synctest.Test(t, testWorkRetriedThenDropped) }

func testWorkRetriedThenDropped(t *testing.T) {
	var calls atomic.Int32
	rec := &recorder{work: func(_ context.Context, k cache.ObjectName, _ *wire.PodRow) error {
		if k.Name == "bad" {
			calls.Add(1)
			return errors.New("logs unavailable")
		}
		return nil
	}}
	f := start(t, 1, 3, rec, pod("bad", "1"), pod("good", "1"))
	select {
	case d := <-f.drops:
		if want := "ns/bad: gave up after 3 failed attempts: logs unavailable"; d != want {
			t.Errorf("drop error %q, want %q", d, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the failing key was never dropped")
	}
	synctest.Wait() // no attempt is on its way
	if n := calls.Load(); n != 3 {
		t.Errorf("work on the failing key ran %d times, want 3", n)
	}
	got := describe(rec.snapshot())
	if len(got) != 2 {
		t.Errorf("messages %v, want one SYNC each: a retry must not deliver again", got)
	}
	if n := f.ctrl.queue.NumRequeues(cache.ObjectName{Namespace: "ns", Name: "bad"}); n != 0 {
		t.Errorf("retry history of a dropped key: %d, want forgotten", n)
	}
	select {
	case <-f.ctrl.InitialDone():
	case <-time.After(time.Second):
		t.Error("failing work kept the initial list from finishing")
	}
}

// retryLater is a failure whose server asked to wait before the next try.
type retryLater time.Duration

func (r retryLater) Error() string             { return "too many requests" }
func (r retryLater) RetryAfter() time.Duration { return time.Duration(r) }

// An error with a RetryAfter waits at least that long before the next
// attempt, where the rate limiter alone would retry within milliseconds.
func TestWorkRetryAfter(t *testing.T) { synctest.Test(t, testWorkRetryAfter) }

func testWorkRetryAfter(t *testing.T) {
	times := make(chan time.Time, 4)
	var calls atomic.Int32
	rec := &recorder{work: func(context.Context, cache.ObjectName, *wire.PodRow) error {
		times <- time.Now()
		if calls.Add(1) == 1 {
			return fmt.Errorf("logs: %w", retryLater(300*time.Millisecond))
		}
		return nil
	}}
	start(t, 1, 5, rec, pod("slow", "1"))
	var at [2]time.Time
	for i := range at {
		select {
		case at[i] = <-times:
		case <-time.After(5 * time.Second):
			t.Fatalf("attempt %d never came", i+1)
		}
	}
	if gap := at[1].Sub(at[0]); gap < 300*time.Millisecond {
		t.Errorf("second attempt %s after the first, want at least the 300ms Retry-After", gap)
	}
}

// Work that fails once and then succeeds is retried with the newest state
// and its history forgotten.
func TestWorkRetrySucceeds(t *testing.T) { synctest.Test(t, testWorkRetrySucceeds) }

func testWorkRetrySucceeds(t *testing.T) {
	var calls atomic.Int32
	seen := make(chan string, 4)
	rec := &recorder{work: func(_ context.Context, _ cache.ObjectName, row *wire.PodRow) error {
		seen <- row.Meta().ResourceVersion
		if calls.Add(1) == 1 {
			return errors.New("once")
		}
		return nil
	}}
	f := start(t, 1, 5, rec, pod("flaky", "1"))
	for i, want := range []string{"1", "1"} {
		select {
		case got := <-seen:
			if got != want {
				t.Errorf("attempt %d worked on rv %s, want %s", i+1, got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("attempt %d never came", i+1)
		}
	}
	synctest.Wait() // the worker is done with it
	if n := f.ctrl.queue.NumRequeues(cache.ObjectName{Namespace: "ns", Name: "flaky"}); n != 0 {
		t.Errorf("requeues after success: %d, want 0", n)
	}
	if got := describe(rec.snapshot()); len(got) != 1 {
		t.Errorf("messages %v, want the SYNC once", got)
	}
}

func TestNeverTwoWorkersOnOneKey(t *testing.T) { synctest.Test(t, testNeverTwoWorkersOnOneKey) }

func testNeverTwoWorkersOnOneKey(t *testing.T) {
	var inFlight, maxSeen atomic.Int32
	rec := &recorder{work: func(context.Context, cache.ObjectName, *wire.PodRow) error {
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
	// A worker pausing in its work waits too, so every goroutine waiting
	// is not yet every worker done: the clock must move on until none is
	// at work and nothing is queued.
	settle(t, func() bool { return inFlight.Load() == 0 && f.ctrl.queue.Len() == 0 },
		func() string { return fmt.Sprintf("the workers were still at work on %d keys", f.ctrl.queue.Len()) })
	if m := maxSeen.Load(); m != 1 {
		t.Fatalf("one key was handled by %d workers at once", m)
	}
	msgs := rec.snapshot()
	if last := msgs[len(msgs)-1]; last.Row.Meta().ResourceVersion != "59" {
		t.Errorf("last message shows rv %s, want the newest, 59", last.Row.Meta().ResourceVersion)
	}
}

// newIdle builds a controller that is never run: tests call its handlers
// and processNext themselves, as the informer and a worker would, in the
// manner of sample-controller's tests.
func newIdle(t testing.TB, rec *recorder, hideSync bool) *Controller {
	t.Helper()
	lw := source.Objects(fake.NewClientset(), fake.NewClientset(), nil, nil, source.Filter{}, nil).ListerWatcher(nil)
	c, err := New(Options{ListerWatcher: lw, Deliver: rec.deliver, Work: rec.work, Workers: 1, MaxRetries: 3, HideSync: hideSync})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.queue.ShutDown)
	return c
}

func row(name, rv, uid string) *wire.PodRow {
	p := pod(name, rv)
	p.UID = types.UID(uid)
	return wire.RowOf(p)
}

// drain runs processNext until the queue is empty.
func drain(c *Controller) {
	for c.queue.Len() > 0 {
		c.processNext(context.Background())
	}
}

func TestProcessNext(t *testing.T) {
	a1, a2, a3 := row("a", "1", "u1"), row("a", "2", "u1"), row("a", "3", "u1")
	b1 := row("a", "4", "u2") // a new pod under the same name
	cases := []struct {
		name     string
		hideSync bool
		events   func(c *Controller)
		want     []string
	}{
		{"updates fold into a shown SYNC", false, func(c *Controller) {
			c.onAdd(a1, true)
			c.onUpdate(a1, a2)
			c.onUpdate(a2, a3)
		}, []string{"SYNC ns/a rv=3"}},
		{"updates folded into a hidden SYNC are an UPDATE of their own", true, func(c *Controller) {
			c.onAdd(a1, true)
			c.onUpdate(a1, a2)
			c.onUpdate(a2, a3)
		}, []string{"SYNC ns/a rv=1", "UPDATE ns/a rv=3"}},
		{"a hidden SYNC without changes is one message", true, func(c *Controller) {
			c.onAdd(a1, true)
		}, []string{"SYNC ns/a rv=1"}},
		{"a new UID in an update (relist) is GONE then ADD", false, func(c *Controller) {
			c.onAdd(a1, false)
			drain(c)
			c.onUpdate(a1, b1)
		}, []string{"ADD ns/a rv=1", "GONE ns/a rv=1", "ADD ns/a rv=4"}},
		{"resyncs and relists of an unchanged pod say nothing", false, func(c *Controller) {
			c.onAdd(a1, false)
			drain(c)
			c.onUpdate(a1, row("a", "1", "u1"))
		}, []string{"ADD ns/a rv=1"}},
		{"a tombstone is GONE with the last state", false, func(c *Controller) {
			c.onAdd(a1, false)
			drain(c)
			c.onDelete(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: a2})
		}, []string{"ADD ns/a rv=1", "GONE ns/a rv=2"}},
		{"a tombstone without an object is still GONE", false, func(c *Controller) {
			c.onAdd(a1, false)
			drain(c)
			c.onDelete(cache.DeletedFinalStateUnknown{Key: "ns/a"})
		}, []string{"ADD ns/a rv=1", "GONE ns/a rv=?"}},
		{"deleted and created again before a worker came", false, func(c *Controller) {
			c.onAdd(a1, true)
			c.onDelete(a2)
			c.onAdd(b1, false)
		}, []string{"GONE ns/a rv=2", "ADD ns/a rv=4"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			c := newIdle(t, rec, tc.hideSync)
			tc.events(c)
			drain(c)
			if got := describe(rec.snapshot()); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// A worker that runs after the informer has stored a newer state but
// before its handler has recorded it reports the state of the event it
// was queued for, and then the newer one: never the same state twice.
func TestNoDuplicateWhenTheCacheIsAhead(t *testing.T) {
	rec := &recorder{}
	c := newIdle(t, rec, false)
	a1, a2 := row("a", "1", "u1"), row("a", "2", "u1")
	if err := c.indexer.Add(a1); err != nil {
		t.Fatal(err)
	}
	c.onAdd(a1, false)
	if err := c.indexer.Update(a2); err != nil { // the store moves on ...
		t.Fatal(err)
	}
	drain(c) // ... a worker runs before the handler hears of it ...
	c.onUpdate(a1, a2)
	drain(c)
	want := []string{"ADD ns/a rv=1", "UPDATE ns/a rv=2"}
	if got := describe(rec.snapshot()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// Failed work is retried without delivering the key's messages again.
func TestRetryDoesNotDeliverAgain(t *testing.T) { synctest.Test(t, testRetryDoesNotDeliverAgain) }

func testRetryDoesNotDeliverAgain(t *testing.T) {
	fails := 2
	var worked []string
	rec := &recorder{work: func(_ context.Context, _ cache.ObjectName, row *wire.PodRow) error {
		if row == nil {
			return nil // gone: nothing to work on
		}
		worked = append(worked, row.Meta().ResourceVersion)
		if fails > 0 {
			fails--
			return errors.New("503")
		}
		return nil
	}}
	c := newIdle(t, rec, false)
	c.onAdd(row("a", "1", "u1"), false)
	c.onDelete(row("b", "1", "u9"))
	deadline := time.Now().Add(5 * time.Second)
	for len(worked) < 3 && time.Now().Before(deadline) {
		// A failed key comes back after the rate limiter's delay, on the
		// bubble's clock: it moves on once the queue's goroutine waits.
		synctest.Wait()
		if c.queue.Len() == 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		c.processNext(context.Background())
	}
	if got := describe(rec.snapshot()); fmt.Sprint(got) != "[ADD ns/a rv=1 GONE ns/b rv=1]" {
		t.Errorf("messages %v, want each once", got)
	}
	if fmt.Sprint(worked) != "[1 1 1]" {
		t.Errorf("work ran on %v, want rv 1 three times (two failures, one success)", worked)
	}
}

func TestMerge(t *testing.T) {
	a, b, c := &wire.PodRow{}, &wire.PodRow{}, &wire.PodRow{}
	cases := []struct {
		name         string
		older, newer *pending
		typ          message.Type
		gone         int
		row, listed  *wire.PodRow
	}{
		{"sync then update stays sync with both states", &pending{typ: message.Sync, row: a, listed: a}, &pending{typ: message.Update, row: b}, message.Sync, 0, b, a},
		{"add then update stays add", &pending{typ: message.Add, row: a}, &pending{typ: message.Update, row: b}, message.Add, 0, b, nil},
		{"add then gone is gone", &pending{typ: message.Add, row: a}, &pending{typ: message.Gone, row: b}, message.Gone, 0, b, nil},
		{"gone then add keeps the old pod", &pending{typ: message.Gone, row: a}, &pending{typ: message.Add, row: b}, message.Add, 1, b, nil},
		{"gone, add, gone", &pending{typ: message.Add, row: b, gone: []*wire.PodRow{a}}, &pending{typ: message.Gone, row: c}, message.Gone, 1, c, nil},
		{"unknown last state is kept", &pending{typ: message.Gone}, &pending{typ: message.Add, row: b}, message.Add, 1, b, nil},
	}
	for _, tc := range cases {
		got := merge(tc.older, tc.newer)
		if got.typ != tc.typ || len(got.gone) != tc.gone || got.row != tc.row || got.listed != tc.listed {
			t.Errorf("%s: got %+v", tc.name, got)
		}
	}
}

// BenchmarkUpdateToMessage is the controller's own cost for one pod update:
// the informer's handler records it, a worker takes the key, reads the
// cache and hands the message on.
func BenchmarkUpdateToMessage(b *testing.B) {
	updates := 0
	c := newIdle(b, &recorder{}, false)
	c.opts.Deliver = func(_ context.Context, msgs []message.Message) error {
		if len(msgs) == 1 && msgs[0].Type == message.Update {
			updates++
		}
		return nil
	}
	rows := []*wire.PodRow{wire.RowOf(pod("p", "1")), wire.RowOf(pod("p", "2"))}
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
