package podsync

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	appsclient "k8s.io/client-go/kubernetes/typed/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubectl-podsync/kubectl-podsync/internal/retry"
	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/controller"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/health"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/target"
)

// A run about workloads (Config.Targets) watches, in each cluster, the
// workload objects themselves, one informer per kind and namespace, and
// the pods of their namespaces: one pod informer per namespace, merged
// into one source, or one informer over every namespace when the targets
// span more than maxNamespaceInformers namespaces and the user may list
// and watch pods in all of them. A workload's pod selector is known once
// its object appears, so the pod controller keeps the pods of the targets
// known so far (controller.Keep) and is asked to look again when a
// selector is learned.

// maxNamespaceInformers is how many namespaces get an informer of their
// own before one over every namespace is tried: a few small lists cost
// less than a list of the whole cluster, many watches more than one.
const maxNamespaceInformers = 3

// targetRun is one cluster's targets.
type targetRun struct {
	cluster int
	list    []*targetState
	byKey   map[check.Target]*targetState
	events  chan<- workloadEvent
	// informers watch the workload objects; ctrl is the pod controller,
	// asked to look again when a selector is learned.
	informers []cache.Controller
	ctrl      *controller.Controller
	ctx       context.Context
	// started is when the run started, for the summary's times.
	started time.Time

	// owners holds, by pod key, the targets of each pod the stream has
	// shown (see trackOwners); the stream goroutine alone uses it.
	owners map[string][]*targetState
	// looks: what is known of the nodes of its DaemonSet pods (nodes.go).
	looks nodeLooks

	// stderr and prefix: for what is said of pods no target owns.
	stderr io.Writer
	prefix string

	// mu guards what the informers learn and the pod controller's
	// workers read: the targets' selectors, UIDs and last objects (nil
	// once deleted), the objects the targets make pods through (the
	// ReplicaSets of the Deployment targets' namespaces, by kind/key), the ControllerRevisions of the DaemonSet targets'
	// namespaces, and the pods named as matched by labels alone.
	mu        sync.RWMutex
	selectors map[check.Target]labels.Selector
	uids      map[check.Target]types.UID
	objects   map[check.Target]runtime.Object
	vias      map[string]metav1.Object
	histories map[string]*appsv1.ControllerRevision
	foreign   map[string]bool
	// links is the owner index of the custom resource targets'
	// namespaces (see status.go).
	links map[string]link

	// deletedOnSuccess: see Config.DeletedOnSuccess.
	deletedOnSuccess map[check.Target]string

	// kinds maps the targets judged by their status; rules judge them.
	kinds map[check.Target]statusKind
	// discovered holds what discovery said of each kind (a Target with
	// only APIVersion and Kind): one request per kind, not per object.
	discovered map[check.Target]statusKind
	rules      *health.Rules
	// runCtx is the run's context: it ends a rule's evaluation when the
	// run ends (--timeout, a signal), so the loop is not held.
	runCtx context.Context
	// gone: the check waits for the targets to go (--until gone).
	gone bool
	// home is the cluster's namespace, watched for pods when no target
	// is namespaced.
	home string

	// inform builds an informer on the cluster's connection; kinds served
	// late get theirs from the goroutine that looks them up again (see
	// late.go), which alone uses clients, linked and wg after start.
	inform  func(api workloadAPI, resource, ns string, names []string, h cache.ResourceEventHandler) cache.Controller
	clients *Clients
	// linked are the namespaces whose owner index is kept.
	linked map[string]bool
	// once: --once, nothing is looked up again.
	once bool
	wg   *sync.WaitGroup
}

// targetState is what the stream keeps of one target.
type targetState struct {
	target check.Target
	// note is the last TargetStatus.Note said on stderr.
	note string
	// pods counts the target's pods the stream has shown and not seen go.
	pods int
	// revs says which of its pods are being replaced.
	revs revisions
	// seen: its object was seen during the run.
	seen bool
}

// workloadEvent is a workload object as its informer saw it; obj is nil
// once it is deleted.
type workloadEvent struct {
	cluster int
	target  check.Target
	obj     runtime.Object
	// served, when set, says that the cluster now serves the kind of
	// target (only its APIVersion and Kind are set): see late.go.
	served *statusKind
	// unreadable, when set, says why the object of target cannot be
	// read (see unread.go).
	unreadable string
}

// workloadAPI lists and watches one kind of workload: a built-in kind's
// (target.Kind.Client) or, through the dynamic client, any other.
type workloadAPI = target.Client

// newTargetRun builds the informers of cluster i's targets; a Pod target
// needs none, its pod is its object. The informers start with start.
func newTargetRun(ctx context.Context, fail context.CancelCauseFunc, cfg Config, targets []check.Target, i int, c *Clients, s *stream) (*targetRun, error) {
	t := &targetRun{cluster: i, byKey: map[check.Target]*targetState{}, events: s.workloads,
		selectors: map[check.Target]labels.Selector{}, owners: map[string][]*targetState{}, started: time.Now(),
		stderr: s.stderr, uids: map[check.Target]types.UID{}, objects: map[check.Target]runtime.Object{},
		vias: map[string]metav1.Object{}, histories: map[string]*appsv1.ControllerRevision{}, foreign: map[string]bool{},
		links: map[string]link{}, kinds: map[check.Target]statusKind{}, discovered: map[check.Target]statusKind{}, rules: cfg.HealthRules, runCtx: ctx, gone: cfg.Check.Gone(),
		deletedOnSuccess: cfg.DeletedOnSuccess}
	t.looks = nodeLooks{answers: s.nodes, nodes: map[string]*nodeLook{}}
	if c != nil {
		t.looks.kube = c.Kube
	}
	var groups []*watchGroup
	byProto := map[check.Target]*watchGroup{}
	for _, tg := range targets {
		if t.byKey[tg] != nil {
			continue
		}
		ts := &targetState{target: tg}
		t.list = append(t.list, ts)
		t.byKey[tg] = ts
		if tg.Kind == check.TargetPod {
			continue
		}
		if c == nil {
			return nil, fmt.Errorf("target %s needs the cluster's clients", tg)
		}
		g, err := t.groupOf(ctx, c, tg)
		if err != nil {
			return nil, err
		}
		if g == nil {
			continue
		}
		if byProto[g.proto] == nil {
			byProto[g.proto] = g
			groups = append(groups, g)
		}
		byProto[g.proto].names = append(byProto[g.proto].names, tg.Name)
	}
	t.clients, t.linked, t.once = c, map[string]bool{}, cfg.Once
	t.inform = func(api workloadAPI, resource, ns string, names []string, h cache.ResourceEventHandler) cache.Controller {
		conn := &connection{ctx: ctx, errOut: s.stderr, fail: fail, requestTimeout: cfg.RequestTimeout,
			listOnly: cfg.Once, resource: resource, quiet: true}
		lw := workloadListWatch(api, c, ns, names, conn)
		if cfg.Once {
			lw.WatchFuncWithContext = source.IdleWatch
		}
		_, inf := cache.NewInformerWithOptions(cache.InformerOptions{
			// WatchList is left to the pod source's choice: off, so a
			// server or a fake client without it is not waited on.
			ListerWatcher: source.WithoutWatchList(lw),
			ObjectType:    api.Object,
			Handler:       h,
		})
		return inf
	}
	inform := func(api workloadAPI, resource, ns string, names []string, h cache.ResourceEventHandler) {
		t.informers = append(t.informers, t.inform(api, resource, ns, names, h))
	}
	for _, g := range groups {
		inform(g.api, g.resource, g.ns, g.names, t.handler(g.proto))
	}
	// The revisions of the Deployments and DaemonSets: every ReplicaSet
	// or ControllerRevision of their namespaces, a few each.
	for _, k := range target.Workloads() {
		for _, ns := range namespacesOf(groups, k.Kind) {
			if via, ok := target.Lookup(k.Via); ok {
				inform(via.Client, via.Resource().Resource, ns, nil, t.revisionHandler(k.Via, k.Kind))
			}
			if k.Revisions.History {
				inform(historyAPI, "controllerrevisions", ns, nil, t.revisionHandler("ControllerRevision", k.Kind))
			}
		}
	}
	for _, ns := range t.customNamespaces() {
		t.linked[ns] = true
		// The built-in kinds a custom resource makes pods through: each
		// has a Kubernetes controller that marks the pods it makes.
		for _, k := range target.Workloads() {
			inform(k.Client, k.Resource().Resource, ns, nil, t.linkHandler(k))
		}
	}
	return t, nil
}

// watchGroup is the targets of one kind and namespace: one informer.
type watchGroup struct {
	// proto is the group's targets without a name.
	proto check.Target
	// ns is the namespace watched: the targets', or none for a
	// cluster-scoped kind.
	ns       string
	api      workloadAPI
	resource string
	names    []string
}

// groupOf is the informer group of one target; nil for a target whose
// kind the cluster does not serve, which waits without one.
func (t *targetRun) groupOf(ctx context.Context, c *Clients, tg check.Target) (*watchGroup, error) {
	proto := tg
	proto.Name = ""
	if !tg.Generic() {
		k, ok := target.Lookup(tg.Kind)
		if !ok || k.Client.Object == nil {
			return nil, fmt.Errorf("target %s: kind %s cannot be watched", tg, tg.Kind)
		}
		return &watchGroup{proto: proto, ns: proto.Namespace, api: k.Client, resource: k.Resource().Resource}, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	kind := check.Target{APIVersion: tg.APIVersion, Kind: tg.Kind}
	k, known := t.discovered[kind]
	if !known {
		var err error
		if k, err = discoverKind(ctx, c, tg); err != nil {
			return nil, err
		}
		t.discovered[kind] = k
	}
	t.kinds[tg] = k
	if k.missing != "" {
		return nil, nil
	}
	return statusGroup(proto, k, c), nil
}

// statusGroup is the informer group of targets judged by their status.
func statusGroup(proto check.Target, k statusKind, c *Clients) *watchGroup {
	g := &watchGroup{proto: proto, ns: proto.Namespace, api: statusAPI(c, k.gvr), resource: k.gvr.GroupResource().String()}
	if !k.namespaced {
		g.ns = ""
	}
	return g
}

// namespacesOf lists the namespaces of the groups of one workload kind.
func namespacesOf(groups []*watchGroup, kind string) []string {
	var out []string
	for _, g := range groups {
		if !g.proto.Generic() && g.proto.Kind == kind {
			out = append(out, g.proto.Namespace)
		}
	}
	return out
}

// historyAPI lists and watches ControllerRevisions.
var historyAPI = target.ClientOf[*appsv1.ControllerRevisionList](&appsv1.ControllerRevision{},
	func(c kubernetes.Interface, ns string) appsclient.ControllerRevisionInterface {
		return c.AppsV1().ControllerRevisions(ns)
	})

// workloadListWatch lists and watches one kind of workload in one
// namespace (only the one object when there is one name), retrying while
// the server cannot be reached, as the pod source does.
func workloadListWatch(api workloadAPI, c *Clients, ns string, names []string, r source.Reporter) *cache.ListWatch {
	narrow := func(o metav1.ListOptions) metav1.ListOptions {
		if len(names) == 1 {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", names[0]).String()
		}
		return o
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return retry.Do(ctx, retry.Backoff(), 0, retry.Unreachable, func() (runtime.Object, error) {
				obj, err := api.List(ctx, c.Kube, ns, narrow(o))
				r.Result("list", err)
				return obj, err
			})
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return retry.Do(ctx, retry.Backoff(), 0, retry.Unreachable, func() (watch.Interface, error) {
				w, err := api.Watch(ctx, c.KubeWatch, ns, narrow(o))
				r.Result("watch", err)
				return w, err
			})
		},
	}
}

// handler hands the stream the objects of one informer group.
func (t *targetRun) handler(proto check.Target) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { t.seen(proto, obj) },
		UpdateFunc: func(_, obj interface{}) { t.seen(proto, obj) },
		DeleteFunc: func(obj interface{}) {
			// A deletion missed while the watch was down comes as a
			// tombstone, whose key is enough.
			key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			if ns, name, err2 := cache.SplitMetaNamespaceKey(key); err == nil && err2 == nil {
				tg := proto
				tg.Name = name
				if ns != "" {
					tg.Namespace = ns
				}
				t.mu.Lock()
				t.objects[tg] = nil
				t.mu.Unlock()
				t.send(workloadEvent{cluster: t.cluster, target: tg})
			}
		},
	}
}

// seen learns a target's selector from its object, and hands the object to
// the stream, after the pods the selector brings in. A deleted workload
// keeps its selector: its pods are seen going.
func (t *targetRun) seen(proto check.Target, obj interface{}) {
	o, ok := obj.(runtime.Object)
	m, err := meta.Accessor(obj)
	if !ok || err != nil {
		return
	}
	tg := proto
	tg.Name = m.GetName()
	if ns := m.GetNamespace(); ns != "" {
		// A cluster-scoped object keeps the namespace its manifest
		// carries, as the target's key.
		tg.Namespace = ns
	}
	ev := workloadEvent{cluster: t.cluster, target: tg, obj: o}
	if t.byKey[ev.target] == nil {
		return
	}
	t.mu.Lock()
	t.uids[ev.target], t.objects[ev.target] = m.GetUID(), o
	t.mu.Unlock()
	if sel, ok := selectorOf(proto, o); ok && t.learn(ev.target, sel) && t.ctrl != nil {
		select {
		case <-t.ctrl.Recheck(ev.target.Namespace):
		case <-t.ctx.Done():
			return
		}
	}
	t.send(ev)
}

// send hands a target's object to the stream; objects of the namespace
// that are not targets are dropped.
func (t *targetRun) send(ev workloadEvent) {
	if t.byKey[ev.target] == nil {
		return
	}
	select {
	case t.events <- ev:
	case <-t.ctx.Done():
	}
}

// selectorOf is a workload's pod selector; a selector that does not parse
// selects nothing, as the controllers treat it. Targets judged by their
// status have none.
func selectorOf(proto check.Target, obj runtime.Object) (labels.Selector, bool) {
	k, ok := target.Lookup(proto.Kind)
	if proto.Generic() || !ok || k.Selector == nil {
		return nil, false
	}
	ls, ok := k.Selector(obj)
	switch {
	case !ok:
		return nil, false
	case ls == nil:
		return labels.Nothing(), true
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return labels.Nothing(), true
	}
	return sel, true
}

// learn records a target's selector and reports whether it changed.
func (t *targetRun) learn(tg check.Target, sel labels.Selector) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.selectors[tg]; ok && old.String() == sel.String() {
		return false
	}
	t.selectors[tg] = sel
	return true
}

// keep is the pod controller's Keep: the pods of any target. A pod that
// only matches a target's selector is named, once.
func (t *targetRun) keep(pod *metav1.ObjectMeta) bool {
	for _, ts := range t.list {
		if t.owns(ts.target, pod) {
			return true
		}
	}
	t.nameForeign(pod)
	return false
}

// keptPages narrows the pages of the initial list that the stream prints
// to the targets' pods, as Keep narrows the controller's messages.
func (t *targetRun) keptPages(observe func(*source.PodRowList)) func(*source.PodRowList) {
	return func(list *source.PodRowList) { observe(list.Where(t.keep)) }
}

// start runs the workload informers until ctx ends and reports whether
// their first lists are in (and handed to the stream) before it ends.
func (t *targetRun) start(ctx context.Context, wg *sync.WaitGroup) bool {
	if t == nil {
		return true
	}
	t.ctx = ctx
	synced := make([]cache.DoneChecker, 0, len(t.informers))
	for _, inf := range t.informers {
		wg.Go(func() { inf.RunWithContext(ctx) })
		synced = append(synced, inf.HasSyncedChecker())
	}
	if unseen := t.servedUnseen(); len(unseen) > 0 {
		wg.Go(func() { t.probeUnseen(ctx, unseen) })
	}
	if !cache.WaitFor(ctx, "", synced...) {
		return false
	}
	t.judgeUnseen()
	t.wg = wg
	if late := t.unserved(); len(late) > 0 && !t.once {
		wg.Go(func() { t.lookAgain(ctx, late) })
	}
	return true
}

// judgeUnseen judges the targets judged by their status that the first
// lists did not hold: an object that does not exist waits for --until
// ready and is gone for --until gone.
func (t *targetRun) judgeUnseen() {
	for _, ts := range t.list {
		t.mu.RLock()
		_, seen := t.objects[ts.target]
		t.mu.RUnlock()
		if ts.target.Generic() && !seen {
			t.send(workloadEvent{cluster: t.cluster, target: ts.target})
		}
	}
}

// update judges a target's object as it is now, and says its note once.
func (t *targetRun) update(ev workloadEvent, eval *check.Evaluator, stderr io.Writer) {
	if ev.served != nil {
		t.learnServed(ev.target, *ev.served, eval)
		return
	}
	ts := t.byKey[ev.target]
	if ev.unreadable != "" {
		if !t.hasSeen(ev.target) && !t.gone {
			eval.SetTarget(ev.target, check.TargetStatus{State: check.Pending, Message: ev.unreadable})
		}
		return
	}
	r := t.judge(ev.target, ev.obj)
	if ev.obj == nil && ts.seen && (t.gone || t.absenceMeets(ev.target) == "") {
		r.Message = "was deleted"
	}
	if r.Note != "" && r.Note != ts.note {
		fmt.Fprintf(stderr, "podsync: %s\n", r.Note)
	}
	ts.note = r.Note
	ts.seen = ts.seen || ev.obj != nil
	eval.SetTarget(ev.target, r)
	if revs := t.revisionsOf(ev.target, ev.obj); !revs.equal(ts.revs) {
		ts.revs = revs
		t.rejudge(ts, eval)
	}
}

// namespaces lists the namespaces of the targets, sorted; none for a
// cluster-scoped one.
func (t *targetRun) namespaces() []string {
	var out []string
	for _, ts := range t.list {
		if ts.target.Namespace != "" {
			out = append(out, ts.target.Namespace)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// podNamespaces are the namespaces whose pods are watched: those of the
// targets, or the cluster's own when every target is cluster-scoped.
func (t *targetRun) podNamespaces() []string {
	if nss := t.namespaces(); len(nss) > 0 {
		return nss
	}
	return []string{t.home}
}

// podSource is the pods of the targets' namespaces: see the top of the
// file. Which informers it takes is said at -v=2.
func (t *targetRun) podSource(ctx context.Context, cfg Config, c *Clients, r source.Reporter) source.Source {
	nss := t.podNamespaces()
	in := func(ns string) source.Source {
		return podsIn(cfg, c, source.Filter{Namespace: ns, KeepManagedFields: cfg.KeepManagedFields, Lean: cfg.SortBy == ""}, r)
	}
	if len(nss) == 1 {
		klog.V(2).Infof("podsync: watching the pods of namespace %s with one informer", nss[0])
		return in(nss[0])
	}
	if len(nss) > maxNamespaceInformers {
		allowed, why := mayWatchAllPods(ctx, c.Kube)
		if allowed {
			klog.V(2).Infof("podsync: watching the pods of %d namespaces (%s) with one informer over every namespace: %s",
				len(nss), strings.Join(nss, ", "), why)
			set := map[string]bool{}
			for _, ns := range nss {
				set[ns] = true
			}
			return in("").InNamespaces(set)
		}
		klog.V(2).Infof("podsync: watching the pods of %d namespaces (%s) with one informer per namespace: %s", len(nss), strings.Join(nss, ", "), why)
	} else {
		klog.V(2).Infof("podsync: watching the pods of %d namespaces (%s) with one informer per namespace", len(nss), strings.Join(nss, ", "))
	}
	srcs := make([]source.Source, 0, len(nss))
	for _, ns := range nss {
		srcs = append(srcs, in(ns))
	}
	return source.Merge(srcs...)
}

// mayWatchAllPods asks the API server whether the user may list and watch
// pods in every namespace, and says why not.
func mayWatchAllPods(ctx context.Context, c kubernetes.Interface) (bool, string) {
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: "pods"},
		}}
		got, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		switch {
		case err != nil:
			return false, fmt.Sprintf("could not ask whether pods may be %sed in every namespace: %s", verb, text.OneLine(err.Error(), 0))
		case !got.Status.Allowed:
			return false, fmt.Sprintf("pods may not be %sed in every namespace", verb)
		}
	}
	return true, "pods may be listed and watched in every namespace"
}

// trackOwners records, for each pod the stream has shown, the targets
// that own it: the summary counts and explains each target's pods from
// them, also when the run ended before the informer held the whole list.
func (t *targetRun) trackOwners(m message.Message) {
	if t == nil {
		return
	}
	key := m.Key.String()
	for _, ts := range t.owners[key] {
		ts.pods--
	}
	delete(t.owners, key)
	if m.Type == message.Gone || m.Row == nil {
		return
	}
	for _, ts := range t.list {
		if t.owns(ts.target, m.Row.Meta()) {
			t.owners[key] = append(t.owners[key], ts)
			ts.pods++
		}
	}
}

// summarize is the summary's line of each target.
func (t *targetRun) summarize(w *clusterRun, gone bool) []check.TargetSummary {
	if t == nil {
		return nil
	}
	v := w.eval.Verdict()
	unsatisfied := map[*targetState][]string{}
	for _, k := range w.eval.UnsatisfiedKeys() {
		for _, ts := range t.owners[k] {
			_, name, _ := strings.Cut(k, "/")
			unsatisfied[ts] = append(unsatisfied[ts], name)
		}
	}
	several := len(t.namespaces()) > 1
	rollouts := map[check.Target]check.TargetResult{}
	for _, tr := range w.eval.TargetResults() {
		rollouts[tr.Target] = tr
	}
	out := make([]check.TargetSummary, 0, len(t.list))
	for _, ts := range t.list {
		tg, tr := ts.target, rollouts[ts.target]
		s := check.TargetSummary{APIVersion: tg.APIVersion, Kind: tg.Kind, Namespace: tg.Namespace, Name: tg.Name,
			Pods: ts.pods, ShowNamespace: several && tg.Namespace != "", Context: w.label}
		mine := unsatisfied[ts]
		switch {
		case gone && tg.Generic() && tr.Status.State != check.Met:
			s.Verdict, s.Reason = check.TargetNotMet, tr.Status.Message
		case gone && tg.Generic() && s.Pods == 0:
			s.Verdict, s.Reason = check.TargetMet, tr.Status.Message
			s.MetAfterSeconds = check.RoundDuration(tr.MetAt.Sub(t.started)).Seconds()
		case gone && s.Pods == 0:
			// The summary is made as the last pod goes.
			s.Verdict, s.Reason = check.TargetMet, "no pod left"
			s.MetAfterSeconds = check.RoundDuration(time.Since(t.started)).Seconds()
		case gone:
			s.Verdict, s.Reason = check.TargetNotMet, fmt.Sprintf("%d %s left", s.Pods, text.Plural(s.Pods, "pod", "pods"))
		case v.State == check.Failed && v.Failure.Target == tg:
			s.Verdict, s.Reason = check.TargetFailed, strings.TrimPrefix(v.Failure.Reason+": "+v.Failure.Message, ": ")
			s.Rule = tr.Status.Rule
		case v.State == check.Failed && slices.Contains(t.owners[v.Failure.Key], ts):
			s.Verdict, s.Reason = check.TargetFailed, v.Failure.String()
		case tr.Status.State != check.Met:
			s.Verdict, s.Reason, s.Rule = check.TargetNotMet, tr.Status.Message, tr.Status.Rule
		case len(mine) > 0:
			s.Verdict = check.TargetNotMet
			s.Reason = fmt.Sprintf("%d of its pods %s not satisfy %s: %s", len(mine), text.Plural(len(mine), "does", "do"), v.Until, strings.Join(mine, ", "))
		default:
			s.Verdict, s.Reason, s.Rule = check.TargetMet, tr.Status.Message, tr.Status.Rule
			if tg.Kind == check.TargetPod {
				s.Reason = "satisfies " + v.Until
			}
			s.MetAfterSeconds = check.RoundDuration(tr.MetAt.Sub(t.started)).Seconds()
		}
		out = append(out, s)
	}
	return out
}

// prepare tells the evaluator about the targets and which of their pods
// are replaced.
func (t *targetRun) prepare(eval *check.Evaluator) {
	for _, ts := range t.list {
		eval.AddTarget(ts.target)
		if t.absenceMeets(ts.target) != "" && !t.gone {
			eval.SetAbsent(ts.target, t.judge(ts.target, nil))
		}
		if k := t.kinds[ts.target]; k.missing != "" {
			eval.SetTarget(ts.target, t.judge(ts.target, nil))
		}
	}
	eval.SetReplaced(t.replaced)
	eval.SetNodeGone(t.nodeGone)
}

// keeper is the pod controller's Keep: nil without targets.
func (t *targetRun) keeper() controller.Keep {
	if t == nil {
		return nil
	}
	return t.keep
}

// targetFailed reports whether a target, rather than a pod, failed the
// check in some cluster.
func (s *stream) targetFailed() bool {
	for _, w := range s.clusters {
		if v := w.eval.Verdict(); v.State == check.Failed && v.Failure.Target.Kind != "" {
			return true
		}
	}
	return false
}
