package podsync

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-podsync/kubectl-podsync/internal/events"
	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
)

// Bounds of the Events held for pods not shown yet: an Event can arrive
// before its pod's first message, or be about a pod that never matches
// (the selector is not the Events').
const (
	maxHeldPods    = 1000
	maxHeldPerPod  = 32
	heldEventsKept = time.Minute
)

// eventJoin joins a cluster's Events to the pods the stream has shown and
// folds repeats (--events). The stream goroutine alone uses it.
type eventJoin struct {
	// shown holds the UID of each pod shown and not gone.
	shown map[string]types.UID
	held  map[string][]heldEvent
	// pruned is when held was last rid of what it kept too long.
	pruned time.Time
	folds  map[foldKey]*fold
}

type heldEvent struct {
	ev *corev1.Event
	at time.Time
}

// foldKey is what makes two Events the same news, as kubectl events
// folds them: the pod, the type, the reason and the message.
type foldKey struct {
	uid                  types.UID
	typ, reason, message string
}

// fold adds up the counts of the Event objects of one foldKey.
type fold struct {
	counts map[types.UID]int32
	shown  int32
}

func newEventJoin() *eventJoin {
	return &eventJoin{shown: map[string]types.UID{}, held: map[string][]heldEvent{}, folds: map[foldKey]*fold{}}
}

// podShown records that a pod's message was handled and returns the
// Events held for it (GONE: forgets the pod and its Events).
func (j *eventJoin) podShown(m message.Message) []*corev1.Event {
	key := m.Key.String()
	if m.Type == message.Gone || m.Row == nil {
		uid := j.shown[key]
		delete(j.shown, key)
		delete(j.held, key)
		for k := range j.folds {
			if k.uid == uid {
				delete(j.folds, k)
			}
		}
		return nil
	}
	j.shown[key] = m.Row.Meta().UID
	held := j.held[key]
	delete(j.held, key)
	var out []*corev1.Event
	for _, h := range held {
		if time.Since(h.at) < heldEventsKept {
			out = append(out, h.ev)
		}
	}
	return out
}

// take joins and folds one Event: it returns the Event to print, with the
// folded count, or nil when it is about a pod not shown (held for a
// while), about another pod of the same name, or adds nothing.
func (j *eventJoin) take(ev *corev1.Event) *corev1.Event {
	key := ev.InvolvedObject.Namespace + "/" + ev.InvolvedObject.Name
	uid, ok := j.shown[key]
	if !ok {
		j.hold(key, ev)
		return nil
	}
	if ev.InvolvedObject.UID != "" && ev.InvolvedObject.UID != uid {
		return nil
	}
	k := foldKey{uid: uid, typ: ev.Type, reason: ev.Reason, message: ev.Message}
	f := j.folds[k]
	if f == nil {
		f = &fold{counts: map[types.UID]int32{}}
		j.folds[k] = f
	}
	f.counts[ev.UID] = events.Count(ev)
	var total int32
	for _, n := range f.counts {
		total += n
	}
	if total <= f.shown {
		return nil
	}
	f.shown = total
	out := *ev
	out.Count = total
	if ev.Series != nil {
		series := *ev.Series
		series.Count = total
		out.Series = &series
	}
	return &out
}

func (j *eventJoin) hold(key string, ev *corev1.Event) {
	j.prune()
	if _, ok := j.held[key]; !ok && len(j.held) >= maxHeldPods {
		return
	}
	if len(j.held[key]) < maxHeldPerPod {
		j.held[key] = append(j.held[key], heldEvent{ev: ev, at: time.Now()})
	}
}

// prune drops, at most once per heldEventsKept, the Events held longer
// than that: those of a pod that is never shown (it left before its
// Events came, or the selector never matched it) would stay otherwise.
func (j *eventJoin) prune() {
	now := time.Now()
	if now.Sub(j.pruned) < heldEventsKept {
		return
	}
	j.pruned = now
	for key, held := range j.held {
		held = slices.DeleteFunc(held, func(h heldEvent) bool { return now.Sub(h.at) >= heldEventsKept })
		if len(held) == 0 {
			delete(j.held, key)
			continue
		}
		j.held[key] = held
	}
}

// event handles one Event from the cluster's Events reflector.
func (s *stream) event(w *clusterRun, m message.Message) (ending, bool) {
	ev := w.join.take(m.Event)
	if ev == nil {
		return ending{}, false
	}
	m.Type, m.Event = message.EventType(ev), ev
	return s.printNews(w, m)
}

// watchEvents runs a reflector of Events scoped like the pods (the same
// namespaces, the one pod name if there is one) until ctx ends, and
// hands each Event newer than start, or whose count grew, to the stream.
// A refusal (RBAC) is said once and ends the Events, not the run.
func (s *stream) watchEvents(ctx context.Context, w *clusterRun, start time.Time) {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	ns := w.namespace
	sel := fields.Set{"involvedObject.kind": "Pod"}
	if len(s.cfg.Scope.Names) == 1 {
		sel["involvedObject.name"] = s.cfg.Scope.Names[0]
	}
	refused := func(err error) {
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			fmt.Fprintf(s.stderr, "warning: --events: cannot list or watch events%s: %s; the stream goes on without them\n", s.in(w), text.SafeLine(err.Error(), 0))
			stop()
		}
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = sel.AsSelector().String()
			list, err := w.clients.Kube.CoreV1().Events(ns).List(ctx, opts)
			refused(err)
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = sel.AsSelector().String()
			wi, err := w.clients.KubeWatch.CoreV1().Events(ns).Watch(ctx, opts)
			refused(err)
			return wi, err
		},
	}
	send := func(ev *corev1.Event) {
		key := cache.ObjectName{Namespace: ev.InvolvedObject.Namespace, Name: ev.InvolvedObject.Name}
		select {
		case s.deliveries <- delivery{cluster: w.index, msgs: []message.Message{{Type: message.EventType(ev), Key: key, Event: ev}}}:
		case <-ctx.Done():
		}
	}
	counts := newEventCounts(start, send)
	cache.NewReflectorWithOptions(lw, &corev1.Event{}, counts, cache.ReflectorOptions{}).RunWithContext(ctx)
}

// in names the cluster in a line when the run watches several.
func (s *stream) in(w *clusterRun) string {
	if !s.several {
		return ""
	}
	return " in context " + w.name
}
