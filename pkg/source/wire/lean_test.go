package wire

import (
	"github.com/kubectl-podsync/kubectl-podsync/internal/podtest"

	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"sigs.k8s.io/randfill"
)

// Pods with the same labels and owners share one copy of each in their
// lean rows; a pod with other labels or another owner gets its own.
func TestLeanRowsShareLabelsAndOwners(t *testing.T) {
	yes := true
	pod := func(name, app, owner string) *PodRow {
		p := podtest.BenchPod()
		p.Name, p.Labels = name, map[string]string{"app": app, "tier": "web"}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner, UID: types.UID("u-" + owner), Controller: &yes}}
		row := &PodRow{whole: p}
		Lean(row)
		return row
	}
	a, b, c, d := pod("a", "shop", "rs1"), pod("b", "shop", "rs1"), pod("c", "cart", "rs1"), pod("d", "shop", "rs2")
	same := func(x, y any) bool { return reflect.ValueOf(x).Pointer() == reflect.ValueOf(y).Pointer() }
	if !same(a.Meta().Labels, b.Meta().Labels) || !same(a.Meta().OwnerReferences, b.Meta().OwnerReferences) {
		t.Error("two pods with the same labels and owner do not share them")
	}
	if same(a.Meta().Labels, c.Meta().Labels) || !reflect.DeepEqual(c.Meta().Labels, map[string]string{"app": "cart", "tier": "web"}) {
		t.Errorf("a pod with other labels got %v", c.Meta().Labels)
	}
	if same(a.Meta().OwnerReferences, d.Meta().OwnerReferences) || d.Meta().OwnerReferences[0].Name != "rs2" {
		t.Errorf("a pod with another owner got %v", d.Meta().OwnerReferences)
	}
	if !same(a.Meta().Labels, d.Meta().Labels) {
		t.Error("the labels of pods of two owners are not shared")
	}
}

// An owner that differs only in whether it is the controller is another
// owner.
func TestSharedOwnersTellControllersApart(t *testing.T) {
	yes, no := true, false
	ref := func(controller *bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", UID: "u", Controller: controller}}
	}
	owners := func(controller *bool) []metav1.OwnerReference {
		out, _ := sharedOwners(ref(controller))
		return out
	}
	got := []*bool{owners(&yes)[0].Controller, owners(&no)[0].Controller, owners(nil)[0].Controller}
	if got[0] == nil || !*got[0] || got[1] == nil || *got[1] || got[2] != nil {
		t.Errorf("controller flags after sharing: %v %v %v", got[0], got[1], got[2])
	}
}

// The table of shared sets holds a set only while a row holds it: under
// churn, sets come and go and the table follows the rows, not the sets
// ever seen; a set still held is shared on.
func TestSharedSetsFollowTheRows(t *testing.T) {
	var table setTable[map[string]string]
	built := 0
	build := func() map[string]string { built++; return map[string]string{} }
	kept := table.share([]byte("kept"), build)
	for i := range 1000 {
		table.share([]byte(fmt.Sprint(i)), build)
	}
	deadline := time.Now().Add(10 * time.Second)
	for table.size() > 1 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := table.size(); n != 1 {
		t.Errorf("%d sets held once their rows were gone; want 1, the one still held", n)
	}
	// The key is one buffer, changed after each call, as the callers'
	// buffers are: the table keeps a copy of it.
	key := []byte("kept")
	again := table.share(key, build)
	copy(key, "KEPT")
	if again != kept || table.share([]byte("kept"), build) != kept || built != 1001 {
		t.Errorf("a set still held was built again (%d builds)", built)
	}
	runtime.KeepAlive(kept)
}

// A lean row's Name cell shares the pod's name, and the IP cell, unique
// to its pod, stays out of the interned words, while the common words are
// shared between rows.
func TestInternedCells(t *testing.T) {
	columns := []metav1.TableColumnDefinition{{Name: "Name"}, {Name: "Status"}, {Name: "IP"}}
	row := func(name, ip string) *PodRow {
		r := &PodRow{whole: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}, Columns: columns,
			Cells: []interface{}{string([]byte(name)), string([]byte("Running")), string([]byte(ip))}}
		InternCells(r)
		return r
	}
	a, b := row("web-1", "10.0.0.1"), row("web-2", "10.0.0.2")
	if a.Cells[0] != "web-1" || a.Cells[1] != "Running" || a.Cells[2] != "10.0.0.1" {
		t.Fatalf("cells changed: %v", a.Cells)
	}
	if unsafeData(a.Cells[0].(string)) != unsafeData(a.Meta().Name) {
		t.Error("the Name cell does not share the pod's name")
	}
	if unsafeData(a.Cells[1].(string)) != unsafeData(b.Cells[1].(string)) {
		t.Error("the Status cells of two rows are not shared")
	}
	interned.Lock()
	_, kept := interned.m["10.0.0.1"]
	interned.Unlock()
	if kept {
		t.Error("an IP was interned")
	}
}

// unsafeData is where a string's bytes are: two strings that share a copy
// have the same.
func unsafeData(s string) *byte { return unsafe.StringData(s) }

// A lean row keeps no decoded pod: its metadata is read as is, and each
// read of its pod decodes a new copy of the lean pod, the same each time,
// so a reader that changes its copy changes nothing in the cache.
func TestLeanRowKeepsItsPodEncoded(t *testing.T) {
	whole := podtest.BenchPod()
	// Protobuf keeps times in whole seconds, as the server sends them.
	want := slim(podtest.RoundTrip(t, whole))
	row := RowOf(whole)
	Lean(row)
	if row.whole != nil || len(row.lean) == 0 {
		t.Fatalf("lean row holds a decoded pod (%v) or no bytes (%d)", row.whole != nil, len(row.lean))
	}
	if row.Meta().Name != whole.Name || row.Meta().UID != whole.UID || !reflect.DeepEqual(row.Meta().Labels, whole.Labels) {
		t.Errorf("metadata %+v, want the pod's", row.Meta())
	}
	first, second := row.Pod(), row.Pod()
	if first == second {
		t.Fatal("two reads share one pod")
	}
	if !equality.Semantic.DeepEqual(first, want) || !equality.Semantic.DeepEqual(second, want) {
		t.Errorf("read the lean pod\n%+v\nwant\n%+v", first, want)
	}
	first.Status.Phase, first.Status.Conditions[0].Status = "Changed", "Changed"
	if again := row.Pod(); !equality.Semantic.DeepEqual(again, want) {
		t.Errorf("changing a copy changed the row: %+v", again.Status)
	}
	if id := row.Identity(); id.Name != whole.Name || id.Status.Phase != "" {
		t.Errorf("identity %s/%q, want the name and no status", id.Name, id.Status.Phase)
	}
}

// A lean row keeps what tells a condition of an older generation: the
// pod's generation, its status's observedGeneration and each condition's.
func TestLeanRowKeepsGenerations(t *testing.T) {
	p := podtest.BenchPod()
	p.Generation, p.Status.ObservedGeneration = 3, 2
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, ObservedGeneration: 1}}
	raw, _ := podtest.Served(t, p)
	for _, d := range []Decoder{{Lean: true}, {Pack: true}} {
		row, err := d.DecodePod(raw)
		if err != nil {
			t.Fatal(err)
		}
		got := row.Pod()
		if got.Generation != 3 || got.Status.ObservedGeneration != 2 || got.Status.Conditions[0].ObservedGeneration != 1 {
			t.Errorf("lean %v, packed %v: generation %d, status observed %d, Ready observed %d; want 3, 2, 1",
				d.Lean, d.Pack, got.Generation, got.Status.ObservedGeneration, got.Status.Conditions[0].ObservedGeneration)
		}
	}
}

// slim is what a lean pod keeps of a decoded pod, said plainly, for the
// tests of appendLean, which copies it out of the pod's bytes: what is read
// of a pod in table mode. That is the identity, labels and owners (the -L
// columns, the Deployment rollout check), the node (a DaemonSet's pod on a
// deleted node), the containers' names
// (explanations) and sidecar policy (STATUS), and the status the checks
// judge, without images and IDs.
func slim(p *corev1.Pod) *corev1.Pod {
	meta, _ := slimMeta(&p.ObjectMeta)
	out := &corev1.Pod{ObjectMeta: meta}
	s := &p.Status
	// A container's spec matters only until the kubelet reports it (an
	// explanation lists it as not yet reported), and an init container's
	// for its restart policy (a sidecar's STATUS).
	// Containers with a readiness or startup probe keep their timing, from
	// which a check works out how long they may stay unready.
	if len(s.ContainerStatuses) < len(p.Spec.Containers) || anyProbed(p.Spec.Containers) {
		out.Spec.Containers = containerNames(p.Spec.Containers)
	}
	out.Spec.InitContainers = containerNames(p.Spec.InitContainers)
	out.Spec.NodeName = p.Spec.NodeName
	out.Status = corev1.PodStatus{
		Phase: s.Phase, Conditions: s.Conditions, Message: s.Message, Reason: s.Reason, ObservedGeneration: s.ObservedGeneration,
		InitContainerStatuses: slimStatuses(s.InitContainerStatuses),
		ContainerStatuses:     slimStatuses(s.ContainerStatuses),
	}
	return out
}

func slimStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, c := range in {
		out[i] = corev1.ContainerStatus{Name: c.Name, State: slimState(c.State), LastTerminationState: slimState(c.LastTerminationState),
			Ready: c.Ready, RestartCount: c.RestartCount, Started: c.Started}
	}
	return out
}

func slimState(s corev1.ContainerState) corev1.ContainerState {
	if s.Terminated != nil {
		t := *s.Terminated
		t.ContainerID = ""
		s.Terminated = &t
	}
	return s
}

func containerNames(in []corev1.Container) []corev1.Container {
	var out []corev1.Container
	for _, c := range in {
		out = append(out, corev1.Container{Name: c.Name, RestartPolicy: c.RestartPolicy,
			ReadinessProbe: probeTiming(c.ReadinessProbe), StartupProbe: probeTiming(c.StartupProbe)})
	}
	return out
}

func anyProbed(in []corev1.Container) bool {
	for _, c := range in {
		if c.ReadinessProbe != nil || c.StartupProbe != nil {
			return true
		}
	}
	return false
}

func probeTiming(p *corev1.Probe) *corev1.Probe {
	if p == nil {
		return nil
	}
	return &corev1.Probe{InitialDelaySeconds: p.InitialDelaySeconds, TimeoutSeconds: p.TimeoutSeconds,
		PeriodSeconds: p.PeriodSeconds, SuccessThreshold: p.SuccessThreshold, FailureThreshold: p.FailureThreshold}
}

// A lean row's pod, and a packed row's, is slim's cut of the served pod,
// for pods with every field set at random: copying fields out of the
// bytes keeps exactly what slim keeps, and nothing else.
func TestLeanPodIsSlimOfTheServedPod(t *testing.T) {
	fill := randfill.NewWithSeed(16).NilChance(0.2).NumElements(0, 3)
	for i := range 400 {
		var p corev1.Pod
		fill.Fill(&p)
		raw, pod := podtest.Served(t, &p)
		want := slim(pod)
		for _, d := range []Decoder{{Lean: true}, {Pack: true}} {
			row, err := d.DecodePod(raw)
			if err != nil {
				t.Fatalf("pod %d: %v", i, err)
			}
			if got := row.Pod(); !equality.Semantic.DeepEqual(got, want) {
				t.Fatalf("pod %d (lean %v, packed %v): the row's pod is not slim's:\n%s", i, d.Lean, d.Pack, diff.Diff(want, got))
			}
		}
	}
}
