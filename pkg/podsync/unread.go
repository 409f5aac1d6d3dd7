package podsync

import (
	"context"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// An object the list leaves out is not always one that does not exist:
// when the conversion webhook of its kind is down, the API server cannot
// convert it to the version asked for, leaves it out of lists and
// watches, and answers a GET of it with the cause (as `kubectl get`
// shows it). So a target judged by its status that its informer has not
// seen is read by name, now and then while it stays unseen: an error
// other than NotFound becomes its message, and an object that a GET
// returns while the informer does not hold it is judged.

// probeFirst is how long a target may stay unseen before it is read;
// probeMax bounds the wait between two reads, and probeBatch how many
// targets one round reads (a map's order varies, so rounds take turns).
const (
	probeFirst = 2 * time.Second
	probeMax   = 10 * time.Second
	probeBatch = 20
)

// probeUnseen reads, until each is seen or ctx ends, the targets of
// kinds (served kinds only) that the informers have not seen by then.
// It does not wait for the informers' first lists: a list the server
// keeps refusing (429 for an object it cannot convert) would hold it.
// With --once it reads them once.
func (t *targetRun) probeUnseen(ctx context.Context, kinds map[check.Target]statusKind) {
	delay := probeFirst
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		read := 0
		for tg, k := range kinds {
			switch {
			case t.hasSeen(tg):
				delete(kinds, tg)
			case read < probeBatch:
				read++
				t.probe(ctx, tg, k)
			}
		}
		if len(kinds) == 0 || t.once {
			return
		}
		delay = min(2*delay, probeMax)
	}
}

// servedUnseen are the targets of served kinds judged by their status
// that no informer has handed over yet.
func (t *targetRun) servedUnseen() map[check.Target]statusKind {
	out := map[check.Target]statusKind{}
	for _, ts := range t.list {
		k, ok := t.kinds[ts.target]
		if ok && k.missing == "" && !t.hasSeen(ts.target) {
			out[ts.target] = k
		}
	}
	return out
}

// hasSeen reports whether an informer has handed over tg's object.
func (t *targetRun) hasSeen(tg check.Target) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	_, seen := t.objects[tg]
	return seen
}

// probe reads tg by name and tells the stream what the read says.
func (t *targetRun) probe(ctx context.Context, tg check.Target, k statusKind) {
	ns := tg.Namespace
	if !k.namespaced {
		ns = ""
	}
	obj, err := t.clients.Dynamic.Resource(k.gvr).Namespace(ns).Get(ctx, tg.Name, metav1.GetOptions{})
	switch {
	case ctx.Err() != nil || apierrors.IsNotFound(err):
	case err != nil:
		t.send(workloadEvent{cluster: t.cluster, target: tg, unreadable: "cannot be read: " + cause(err)})
	case !t.hasSeen(tg):
		proto := tg
		proto.Name = ""
		t.seen(proto, obj)
	}
}

// cause is what a read's error says, from the part that names the cause
// when the API server wraps it (a conversion webhook's failure comes
// after the storage layer's words).
func cause(err error) string {
	msg := text.OneLine(err.Error(), 0)
	if i := strings.Index(msg, "conversion webhook for "); i >= 0 {
		msg = msg[i:]
	}
	return msg
}
