package verdicts

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// name is the workload's name in every scenario; pods are labelled app=w.
const name = "w"

// seedLabel confines a scenario's pods to its own two nodes, so that a
// DaemonSet, a node deleted or an unschedulable template touch no other
// scenario running in the same cluster.
const seedLabel = "verdicts/seed"

// failOnStates are the template states whose pods show a reason of
// podsync's default --fail-on.
var failOnStates = []string{localcluster.StateCrashLoop, localcluster.StateImagePullBackOff, localcluster.StateError}

// play is one run of a scenario in namespace ns.
type play struct {
	t     *testing.T
	sc    scenario
	ns    string
	cs    kubernetes.Interface
	dyn   dynamic.Interface
	start time.Time

	mu sync.Mutex
	// causes are the spans of time in which a pod of the workload could
	// show a --fail-on reason that podsync must judge: a failing template
	// current, a Job's pod ended by a kubelet.
	causes []span
	log    []string
	checks []*check
	wg     sync.WaitGroup

	// watchMu guards what the play's watches keep: the object's last
	// state, which pods are ready, and the checks they feed.
	watchMu   sync.Mutex
	last      *unstructured.Unstructured
	ready     map[string]bool
	following []*check
}

// span is [from, to); an open span has a zero to.
type span struct{ from, to time.Time }

func (p *play) logf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log = append(p.log, fmt.Sprintf("%6.1fs ", time.Since(p.start).Seconds())+fmt.Sprintf(format, args...))
}

func gvr(kind string) schema.GroupVersionResource {
	if k, ok := crKinds[kind]; ok {
		return k.gvr()
	}
	switch kind {
	case "Job":
		return schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	default:
		return schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: strings.ToLower(kind) + "s"}
	}
}

func (p *play) target() string { return strings.ToLower(p.sc.kind) + "/" + name }

// run plays the scenario: the workload, then each step in turn; checks run
// alongside the steps that follow them. It returns when every check ended.
func (p *play) run() {
	p.start = time.Now()
	p.ready = map[string]bool{}
	ctx, stop := context.WithCancel(context.Background())
	var watching sync.WaitGroup
	watching.Go(func() { p.watch(ctx) })
	defer func() {
		stop()
		watching.Wait()
	}()
	if k, ok := crKinds[p.sc.kind]; ok {
		// No pods: no nodes either.
		withCRDs(p.t)
		env.Apply(p.t, p.ns, crManifest(k))
	} else {
		p.addNodes()
		env.Apply(p.t, p.ns, p.manifest())
	}
	p.logf("created %s", p.sc)
	p.noteTemplate(p.sc.opts["state"])
	for _, s := range p.sc.steps {
		p.do(s)
	}
	p.wg.Wait()
}

// addNodes registers the scenario's two nodes, removed at the test's end.
func (p *play) addNodes() {
	for _, n := range []string{"a", "b"} {
		p.addNode(n)
	}
	p.t.Cleanup(func() {
		for _, n := range []string{"a", "b"} {
			_ = p.cs.CoreV1().Nodes().Delete(context.Background(), p.nodeName(n), metav1.DeleteOptions{})
		}
	})
}

func (p *play) nodeName(n string) string { return p.ns + "-" + n }

// addNode registers a kwok node of the scenario, as a kubelet would.
func (p *play) addNode(n string) {
	res := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1k"), corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods: resource.MustParse("1000"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        p.nodeName(n),
			Labels:      map[string]string{"kubernetes.io/hostname": p.nodeName(n), "kubernetes.io/os": "linux", "type": "kwok", seedLabel: p.ns},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res},
	}
	_, err := p.cs.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		p.t.Fatalf("create node %s: %v", node.Name, err)
	}
}

// manifest is the workload at version 1.
func (p *play) manifest() string {
	sc := p.sc
	var b strings.Builder
	api := "apps/v1"
	if sc.kind == "Job" {
		api = "batch/v1"
	}
	fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\nspec:\n", api, sc.kind, name)
	if sc.kind == "Deployment" || sc.kind == "StatefulSet" {
		fmt.Fprintf(&b, "  replicas: %d\n", sc.opt("replicas", 1))
	}
	if v := sc.opt("minready", 0); v > 0 {
		fmt.Fprintf(&b, "  minReadySeconds: %d\n", v)
	}
	switch sc.kind {
	case "Deployment":
		if v := sc.opt("deadline", 0); v > 0 {
			fmt.Fprintf(&b, "  progressDeadlineSeconds: %d\n", v)
		}
		switch sc.opts["strategy"] {
		case "recreate":
			b.WriteString("  strategy: {type: Recreate}\n")
		case "surge0":
			b.WriteString("  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}\n")
		}
	case "StatefulSet":
		fmt.Fprintf(&b, "  serviceName: %s\n  podManagementPolicy: %s\n", name, sc.opts["policy"])
		if v := sc.opt("partition", 0); v > 0 {
			fmt.Fprintf(&b, "  updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: %d}}\n", v)
		}
	case "Job":
		fmt.Fprintf(&b, "  completions: %d\n  parallelism: %d\n  backoffLimit: %d\n", sc.opt("completions", 1), sc.opt("parallelism", 1), sc.opt("backoff", 0))
	}
	if sc.kind != "Job" {
		fmt.Fprintf(&b, "  selector:\n    matchLabels: {app: %s}\n", name)
	}
	fmt.Fprintf(&b, "  template:\n    metadata:\n      labels: {app: %s}\n", name)
	if st := sc.opts["state"]; st != "" {
		fmt.Fprintf(&b, "      annotations: {%s: %s}\n", localcluster.StateAnnotation, st)
	}
	b.WriteString("    spec:\n")
	if sc.kind == "Job" {
		b.WriteString("      restartPolicy: Never\n")
	}
	fmt.Fprintf(&b, "      nodeSelector: {%s: %s}\n", seedLabel, p.ns)
	fmt.Fprintf(&b, "      containers:\n      - name: app\n        image: registry.example/app:1\n")
	return b.String()
}

// do plays one step.
func (p *play) do(s step) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := p.dyn.Resource(gvr(p.sc.kind)).Namespace(p.ns)
	var err error
	switch s.op {
	case opSleep:
		time.Sleep(time.Duration(s.arg(0, 500)) * time.Millisecond)
		return
	case opCheck:
		p.startCheck(time.Duration(s.arg(0, 15)) * time.Second)
		return
	case opStatus, opBump:
		p.doCR(s)
		return
	case opImage:
		state := ""
		if len(s.args) > 1 {
			state = s.args[1]
		}
		err = p.patch(ctx, res, templatePatch(s.arg(0, 2), state, p.ns))
		if err == nil {
			p.noteTemplate(state)
		}
	case opScale:
		err = p.patch(ctx, res, fmt.Sprintf(`{"spec":{"replicas":%d}}`, s.arg(0, 1)))
	case opPause, opResume:
		err = p.patch(ctx, res, fmt.Sprintf(`{"spec":{"paused":%t}}`, s.op == opPause))
	case opUndo, opRestart:
		out, uerr := env.KubectlErr("rollout", s.op, "-n", p.ns, p.target())
		p.logf("%s: %s", s.op, lastLine(out))
		if uerr == nil {
			p.readTemplate(ctx, res)
		}
		return
	case opSettle:
		p.settle()
		return
	case opPartition:
		err = p.patch(ctx, res, fmt.Sprintf(`{"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":%d}}}}`, s.arg(0, 0)))
	case opEvict, opShutdown:
		how := harness.Evicted
		if s.op == opShutdown {
			how = harness.ShutDown
		}
		pod := p.pickPod(ctx, s.arg(0, 0), func(pod *corev1.Pod) bool { return pod.Status.Phase == corev1.PodRunning })
		if pod == "" {
			p.logf("%s: no running pod", s)
			return
		}
		err = harness.EndPodErr(p.cs, p.ns, pod, how)
		if err == nil && p.sc.kind == "Job" {
			// No controller replaces a Job's pod that a kubelet ended: it
			// is a failure of the Job's own, which podsync may report.
			p.cause(time.Now(), time.Time{})
		}
		p.logf("%s: pod %s", s, pod)
	case opDeletePod:
		pod := p.pickPod(ctx, s.arg(0, 0), func(*corev1.Pod) bool { return true })
		if pod == "" {
			p.logf("%s: no pod", s)
			return
		}
		err = p.cs.CoreV1().Pods(p.ns).Delete(ctx, pod, metav1.DeleteOptions{})
		p.logf("%s: pod %s", s, pod)
	case opDeleteNode:
		err = p.cs.CoreV1().Nodes().Delete(ctx, p.nodeName("b"), metav1.DeleteOptions{})
	case opAddNode:
		p.addNode("b")
	default:
		p.t.Fatalf("unknown step %q", s)
	}
	if err != nil {
		// The game goes on: a pod gone in between, a node already deleted.
		p.logf("%s: %v", s, err)
		return
	}
	if s.op != opEvict && s.op != opShutdown && s.op != opDeletePod {
		p.logf("%s", s)
	}
}

func (p *play) patch(ctx context.Context, res dynamic.ResourceInterface, body string) error {
	_, err := res.Patch(ctx, name, types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patch %s with %s: %w", p.target(), body, err)
	}
	return nil
}

// templatePatch sets the pod template's image, kwok state and node
// selector.
func templatePatch(version int, state, ns string) string {
	var ann any // null removes the annotation
	if state != "" && state != stateUnschedulable {
		ann = state
	}
	selector := ns
	if state == stateUnschedulable {
		selector = ns + "-nowhere"
	}
	body := map[string]any{"spec": map[string]any{"template": map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{localcluster.StateAnnotation: ann}},
		"spec": map[string]any{
			"nodeSelector": map[string]any{seedLabel: selector},
			"containers":   []any{map[string]any{"name": "app", "image": fmt.Sprintf("registry.example/app:%d", version)}},
		},
	}}}
	b, _ := json.Marshal(body)
	return string(b)
}

// readTemplate notes the state of the template the object now holds
// (after kubectl rollout undo).
func (p *play) readTemplate(ctx context.Context, res dynamic.ResourceInterface) {
	u, err := res.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		p.logf("read the template: %v", err)
		return
	}
	state, _, _ := unstructured.NestedString(u.Object, "spec", "template", "metadata", "annotations", localcluster.StateAnnotation)
	p.noteTemplate(state)
	p.logf("template now: %q", state)
}

// settle waits, at most 30 s, until kubectl says the workload is rolled
// out (a Job: Complete or Failed).
func (p *play) settle() {
	args := []string{"rollout", "status", "-n", p.ns, p.target(), "--timeout=30s"}
	if p.sc.kind == "Job" {
		args = []string{"wait", "-n", p.ns, p.target(), "--for=jsonpath={.status.conditions[0].status}=True", "--timeout=30s"}
	}
	out, err := env.KubectlErr(args...)
	if err != nil {
		p.logf("settle: %v: %s", err, lastLine(out))
		return
	}
	p.logf("settled")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// noteTemplate records that the current template is in state from now on.
func (p *play) noteTemplate(state string) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	open := len(p.causes) > 0 && p.causes[len(p.causes)-1].to.IsZero()
	failing := slices.Contains(failOnStates, state)
	switch {
	case failing && !open:
		p.causes = append(p.causes, span{from: now})
	case !failing && open:
		p.causes[len(p.causes)-1].to = now
	}
}

// cause records a span of time in which podsync may fail.
func (p *play) cause(from, to time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.causes = append(p.causes, span{from, to})
}

// pickPod is the name of the i-th (modulo their count) pod of the workload
// that is not being deleted and satisfies ok, by name; "" if none.
func (p *play) pickPod(ctx context.Context, i int, ok func(*corev1.Pod) bool) string {
	list, err := p.cs.CoreV1().Pods(p.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		p.logf("list pods: %v", err)
		return ""
	}
	var names []string
	for i := range list.Items {
		pod := &list.Items[i]
		if pod.DeletionTimestamp == nil && ok(pod) {
			names = append(names, pod.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return names[i%len(names)]
}
