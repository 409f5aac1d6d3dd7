package controller

import (
	"reflect"
	"sync"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// labelled is pod with the label app=app.
func labelled(name, rv, app string) *corev1.Pod {
	p := pod(name, rv)
	p.Labels = map[string]string{"app": app}
	return p
}

// apps keeps the pods whose app label it holds; it widens while the
// controller runs.
type apps struct {
	mu   sync.Mutex
	keep map[string]bool
}

func (a *apps) add(app string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.keep[app] = true
}

func (a *apps) kept(p *metav1.ObjectMeta) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.keep[p.Labels["app"]]
}

// Keep narrows the stream to the pods it keeps, as a label selector on the
// server would: a pod that stops matching leaves with GONE, one never shown
// leaves without a word, and a pod kept only after Keep widened is added by
// Recheck at once, without waiting for its next change.
func TestKeepNarrowsAndWidens(t *testing.T) { synctest.Test(t, testKeepNarrowsAndWidens) }

func testKeepNarrowsAndWidens(t *testing.T) {
	a := &apps{keep: map[string]bool{"web": true}}
	rec := &recorder{keep: a.kept}
	f := start(t, 1, 3, rec, labelled("web-1", "1", "web"), labelled("db-1", "2", "db"))
	got := describe(rec.waitFor(t, 1))
	<-f.ctrl.InitialDone()
	f.update(t, labelled("db-1", "3", "db"))
	f.waitCached(t, "db-1", "3")

	a.add("db")
	f.ctrl.Recheck("ns")
	got = append(got, describe(rec.waitFor(t, 2)[1:])...)
	f.update(t, labelled("web-1", "5", "none"))
	f.delete(t, "db-1")
	got = append(got, describe(rec.waitFor(t, 4)[2:])...)
	want := []string{"SYNC ns/web-1 rv=1", "ADD ns/db-1 rv=3", "GONE ns/web-1 rv=5", "GONE ns/db-1 rv=3"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("messages = %q, want %q", got, want)
	}
	f.create(t, labelled("cache-1", "6", "cache"))
	f.waitCached(t, "cache-1", "6")
	f.delete(t, "cache-1")
	f.waitCached(t, "cache-1", "")
	synctest.Wait() // a message about cache-1 would be on its way by now
	if n := len(rec.snapshot()); n != 4 {
		t.Errorf("%d messages, want 4: %q", n, describe(rec.snapshot()))
	}
}
