package podsync

import (
	"context"
	"math"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/target"
)

// A kind the cluster does not serve when the run starts may be served a
// moment later: a CustomResourceDefinition applied with its objects, or
// by a GitOps controller. While some targets' kind is missing, discovery
// is asked again, at first after a second, then less often up to every
// lookAgainMax; once the kind is served, the stream learns it, its
// targets get their informers (and their namespaces an owner index), and
// the targets the first list does not hold are judged as not there yet.
// Each lookup reads the server's discovery anew: the clients' discovery
// keeps no cache.

// lookAgainFirst and lookAgainMax bound the wait between two lookups.
const (
	lookAgainFirst = time.Second
	lookAgainMax   = 5 * time.Second
)

// unserved are the targets whose kind the cluster does not serve, by
// kind (a Target with only APIVersion and Kind). --until gone waits for
// none of them: an object of a kind not served cannot exist.
func (t *targetRun) unserved() map[check.Target][]check.Target {
	if t.gone || t.once {
		return nil
	}
	out := map[check.Target][]check.Target{}
	for _, ts := range t.list {
		tg := ts.target
		if k, ok := t.kinds[tg]; ok && k.missing != "" {
			kind := check.Target{APIVersion: tg.APIVersion, Kind: tg.Kind}
			out[kind] = append(out[kind], tg)
		}
	}
	return out
}

// lookAgain asks discovery for the kinds of late until each is served or
// ctx ends.
func (t *targetRun) lookAgain(ctx context.Context, late map[check.Target][]check.Target) {
	backoff := wait.Backoff{Duration: lookAgainFirst, Factor: 2, Cap: lookAgainMax, Steps: math.MaxInt32}
	timer := time.NewTimer(backoff.Step())
	defer timer.Stop()
	for len(late) > 0 {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		for kind, tgs := range late {
			k, err := discoverKind(ctx, t.clients, tgs[0])
			if err != nil {
				klog.V(2).Infof("podsync: %slooking up %s again: %v", t.prefix, kind.APIVersion, err)
				continue
			}
			if k.missing != "" || !t.answers(ctx, k, tgs[0]) {
				continue
			}
			delete(late, kind)
			t.serve(ctx, kind, k, tgs)
		}
		timer.Reset(backoff.Step())
	}
}

// answers reports whether the API server lists a kind that discovery
// has just shown: the handler of a CustomResourceDefinition that was just
// established may still answer 404 for a moment, and a first list that
// fails ends the run.
func (t *targetRun) answers(ctx context.Context, k statusKind, tg check.Target) bool {
	ns := tg.Namespace
	if !k.namespaced {
		ns = ""
	}
	_, err := t.clients.Dynamic.Resource(k.gvr).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if apierrors.IsNotFound(err) {
		klog.V(2).Infof("podsync: %s%s is served, but not listed yet: %v", t.prefix, k.gvr.GroupResource(), err)
		return false
	}
	// Any other failure is the informer's to report, as at start.
	return true
}

// serve tells the stream that kind is served now, and watches its
// targets.
func (t *targetRun) serve(ctx context.Context, kind check.Target, k statusKind, tgs []check.Target) {
	select {
	case t.events <- workloadEvent{cluster: t.cluster, target: kind, served: &k}:
	case <-ctx.Done():
		return
	}
	klog.V(2).Infof("podsync: %sthe cluster serves %s %s now", t.prefix, kind.APIVersion, kind.Kind)
	groups := map[check.Target]*watchGroup{}
	var order []*watchGroup
	for _, tg := range tgs {
		proto := tg
		proto.Name = ""
		g := groups[proto]
		if g == nil {
			g = statusGroup(proto, k, t.clients)
			groups[proto] = g
			order = append(order, g)
		}
		g.names = append(g.names, tg.Name)
	}
	var synced []cache.DoneChecker
	run := func(inf cache.Controller) {
		t.wg.Go(func() { inf.RunWithContext(ctx) })
		synced = append(synced, inf.HasSyncedChecker())
	}
	for _, g := range order {
		run(t.inform(g.api, g.resource, g.ns, g.names, t.handler(g.proto)))
		if ns := g.proto.Namespace; k.namespaced && !k.discovery.BuiltIn && ns != "" && !t.linked[ns] {
			t.linked[ns] = true
			for _, lk := range target.Workloads() {
				run(t.inform(lk.Client, lk.Resource().Resource, ns, nil, t.linkHandler(lk)))
			}
		}
	}
	if !cache.WaitFor(ctx, "", synced...) {
		return
	}
	unseen := map[check.Target]statusKind{}
	for _, tg := range tgs {
		if !t.hasSeen(tg) {
			t.send(workloadEvent{cluster: t.cluster, target: tg})
			unseen[tg] = k
		}
	}
	if len(unseen) > 0 {
		t.wg.Go(func() { t.probeUnseen(ctx, unseen) })
	}
}

// learnServed records, in the stream, that kind is served now: its
// targets wait for their first list.
func (t *targetRun) learnServed(kind check.Target, k statusKind, eval *check.Evaluator) {
	t.discovered[kind] = k
	for _, ts := range t.list {
		tg := ts.target
		if tg.Generic() && tg.APIVersion == kind.APIVersion && tg.Kind == kind.Kind {
			t.kinds[tg] = k
			eval.SetTarget(tg, check.TargetStatus{State: check.Pending, Message: "its kind is served now; listing it"})
		}
	}
}
