package verdicts

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// scenario is one workload and the sequence of steps played on it. Its
// text form, "Deployment replicas=3 deadline=10 | image 2 crashloop |
// check 20", is what a failing seed prints and what the regression table
// holds.
type scenario struct {
	kind string
	// opts are the workload's settings: replicas, deadline
	// (progressDeadlineSeconds), minready, strategy, policy (StatefulSet
	// podManagementPolicy), partition, completions, parallelism, backoff,
	// state (the first template's kwok state).
	opts  map[string]string
	steps []step
}

// step is one action: its op and its arguments.
type step struct {
	op   string
	args []string
}

// The ops. Each is written as a kubelet, a controller or a user would
// write it; a step that finds nothing to act on (no running pod to evict)
// does nothing.
const (
	opImage      = "image"       // image V [STATE]: a new template (a rollout)
	opScale      = "scale"       // scale N
	opPause      = "pause"       // Deployment spec.paused=true
	opResume     = "resume"      // Deployment spec.paused=false
	opUndo       = "undo"        // kubectl rollout undo
	opEvict      = "evict"       // evict I: the kubelet evicts the I-th running pod
	opShutdown   = "shutdown"    // shutdown I: graceful node shutdown ends the I-th running pod
	opDeletePod  = "delete-pod"  // delete-pod I
	opDeleteNode = "delete-node" // the seed's second node goes away
	opAddNode    = "add-node"    // the seed's second node (back)
	opSleep      = "sleep"       // sleep MS
	opCheck      = "check"       // check T: podsync, kubectl and kstatus start on the target, --timeout T seconds
	opSettle     = "settle"      // wait (at most 30 s) until kubectl says the workload is rolled out, or the Job ended
	opRestart    = "restart"     // kubectl rollout restart
	opPartition  = "partition"   // partition N: a StatefulSet's rollingUpdate.partition
)

// Template states beyond localcluster's: unschedulable is a nodeSelector
// no node has.
const stateUnschedulable = "unschedulable"

func (s step) String() string { return strings.Join(append([]string{s.op}, s.args...), " ") }

func (sc scenario) String() string {
	head := []string{sc.kind}
	for _, k := range optOrder {
		if v, ok := sc.opts[k]; ok {
			head = append(head, k+"="+v)
		}
	}
	parts := []string{strings.Join(head, " ")}
	for _, s := range sc.steps {
		parts = append(parts, s.String())
	}
	return strings.Join(parts, " | ")
}

var optOrder = []string{"replicas", "deadline", "minready", "strategy", "policy", "partition", "completions", "parallelism", "backoff", "state"}

// parse reads a scenario's text form.
func parse(text string) (scenario, error) {
	parts := strings.Split(text, "|")
	head := strings.Fields(parts[0])
	if len(head) == 0 {
		return scenario{}, fmt.Errorf("scenario %q: no kind", text)
	}
	sc := scenario{kind: head[0], opts: map[string]string{}}
	switch sc.kind {
	case "Deployment", "StatefulSet", "DaemonSet", "Job":
	default:
		if isCR(sc.kind) {
			break
		}
		return scenario{}, fmt.Errorf("scenario %q: unknown kind %q", text, sc.kind)
	}
	for _, kv := range head[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return scenario{}, fmt.Errorf("scenario %q: option %q is not KEY=VALUE", text, kv)
		}
		sc.opts[k] = v
	}
	for _, p := range parts[1:] {
		f := strings.Fields(p)
		if len(f) == 0 {
			continue
		}
		sc.steps = append(sc.steps, step{op: f[0], args: f[1:]})
	}
	return sc, nil
}

// without is sc with step i left out.
func (sc scenario) without(i int) scenario {
	out := sc
	out.steps = append(append([]step{}, sc.steps[:i]...), sc.steps[i+1:]...)
	return out
}

func (sc scenario) opt(k string, def int) int {
	if v, ok := sc.opts[k]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

// arg is a step's i-th argument as a number, def when absent.
func (s step) arg(i, def int) int {
	if i < len(s.args) {
		if n, err := strconv.Atoi(s.args[i]); err == nil {
			return n
		}
	}
	return def
}

// generate is the scenario of a seed: the same seed, the same scenario.
func generate(seed uint64) scenario {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	if seed%5 == 0 {
		// One seed in five plays an operator's custom resource (cr_test.go).
		return generateCR(r)
	}
	sc := scenario{opts: map[string]string{}}
	set := func(k string, v int) { sc.opts[k] = strconv.Itoa(v) }
	switch n := r.IntN(20); {
	case n < 8:
		sc.kind = "Deployment"
		set("replicas", 1+r.IntN(4))
		if r.IntN(2) == 0 {
			set("deadline", []int{6, 10, 20}[r.IntN(3)])
		}
		sc.opts["strategy"] = []string{"rolling", "rolling", "surge0", "recreate"}[r.IntN(4)]
	case n < 13:
		sc.kind = "StatefulSet"
		set("replicas", 1+r.IntN(3))
		sc.opts["policy"] = []string{"OrderedReady", "Parallel"}[r.IntN(2)]
		if r.IntN(4) == 0 {
			set("partition", 1)
		}
	case n < 16:
		sc.kind = "DaemonSet"
	default:
		sc.kind = "Job"
		set("completions", 1+r.IntN(3))
		set("parallelism", 1+r.IntN(2))
		set("backoff", r.IntN(3))
		if r.IntN(4) == 0 {
			sc.opts["state"] = "error"
		}
	}
	if sc.kind != "Job" && r.IntN(3) == 0 {
		set("minready", 2)
	}
	n := 3 + r.IntN(8)
	checks := 0
	version := 1
	if r.IntN(2) == 0 {
		// Half the scenarios start from a workload rolled out: the steps
		// then act on running pods.
		sc.steps = append(sc.steps, step{op: opSettle})
	}
	for i := 0; i < n; i++ {
		s := randomStep(r, sc.kind, &version)
		if s.op == opCheck {
			if checks == 3 {
				continue
			}
			checks++
		}
		sc.steps = append(sc.steps, s)
	}
	if checks == 0 {
		// A scenario without a check judges nothing: put one at a random place.
		i := r.IntN(len(sc.steps) + 1)
		sc.steps = append(sc.steps[:i], append([]step{checkStep(r)}, sc.steps[i:]...)...)
	}
	return sc
}

func checkStep(r *rand.Rand) step {
	return step{op: opCheck, args: []string{strconv.Itoa([]int{8, 15, 25}[r.IntN(3)])}}
}

// randomStep draws one step a kind allows, with weights.
func randomStep(r *rand.Rand, kind string, version *int) step {
	type choice struct {
		op     string
		weight int
	}
	choices := []choice{{opSleep, 6}, {opCheck, 4}, {opEvict, 2}, {opShutdown, 1}, {opDeletePod, 2}, {opDeleteNode, 1}, {opAddNode, 1}}
	if kind != "Job" {
		choices = append(choices, choice{opImage, 6}, choice{opUndo, 2}, choice{opRestart, 1}, choice{opSettle, 1})
	}
	if kind == "StatefulSet" {
		choices = append(choices, choice{opPartition, 1})
	}
	if kind == "Deployment" || kind == "StatefulSet" {
		choices = append(choices, choice{opScale, 2})
	}
	if kind == "Deployment" {
		choices = append(choices, choice{opPause, 2}, choice{opResume, 2})
	}
	total := 0
	for _, c := range choices {
		total += c.weight
	}
	pick := r.IntN(total)
	op := ""
	for _, c := range choices {
		if pick < c.weight {
			op = c.op
			break
		}
		pick -= c.weight
	}
	switch op {
	case opSleep:
		return step{op: op, args: []string{strconv.Itoa(200 + r.IntN(4000))}}
	case opCheck:
		return checkStep(r)
	case opEvict, opShutdown, opDeletePod:
		return step{op: op, args: []string{strconv.Itoa(r.IntN(4))}}
	case opImage:
		*version++
		args := []string{strconv.Itoa(*version)}
		if n := r.IntN(10); n < 4 {
			args = append(args, []string{"crashloop", "imagepullbackoff", "never-ready", stateUnschedulable}[n])
		}
		return step{op: op, args: args}
	case opScale:
		return step{op: op, args: []string{strconv.Itoa(r.IntN(5))}}
	case opPartition:
		return step{op: op, args: []string{strconv.Itoa(r.IntN(3))}}
	}
	return step{op: op}
}
