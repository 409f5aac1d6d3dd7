package podsync_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing/synctest"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/kubectl-podsync/kubectl-podsync/internal/retry"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/output"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source"
)

// The model-based test: random histories of pod changes, played by the
// sim against the real controller, queue, workers, writer and check of a
// podsync run, and an oracle that holds the printed stream against what
// really happened. See checkRun for what it requires.

// opStep is one step of a history.
type opStep int

const (
	opCreate     opStep = iota // a pod of an absent name
	opUpdate                   // a new state (or the same, with another annotation)
	opDelete                   // the pod is deleted
	opRecreate                 // deleted and created again under the same name at once
	opCut                      // every watch is cut; the reflector resumes
	opCompact                  // the log is compacted, then every watch is cut: relist
	opPause                    // the history waits
	opRevision                 // a workload target rolls out a revision (or back to one)
	opDisconnect               // a context's cluster cannot be reached
	opReconnect                // and can again
	opTidy                     // every pod judged becomes ready; with targets, the rollouts complete
	opRollBack                 // a workload rolls out, its pod left behind crash-loops, and it rolls back
)

type op struct {
	step  opStep
	key   int
	state podState
	pause time.Duration
	// rev: the revision of a pod created (targets), or the one a workload
	// rolls out to; restarts: the container restarts an update adds.
	rev      int
	restarts int32
	// ctx: the context an opDisconnect or opReconnect is about (and of
	// every cut and compaction).
	ctx int
}

// history is one generated case: the cluster before the run, the steps
// during it, and how podsync runs.
type history struct {
	seed       uint64
	namespaces []string
	names      []string
	initial    map[int]podState // key index -> state before the run
	ops        []op
	workers    int
	watchOnly  bool
	format     string
	check      bool
	resync     bool
	// pageSize: the sim hands the initial list in pages of this size (0:
	// at once); failFirstList: its first list fails after one page.
	pageSize      int
	failFirstList bool
	// production: the rows are lean or packed, as the run's sources make
	// them; else whole pods.
	production bool
	// until and minPods: the check's --until (ready or gone) and
	// --min-pods (check.Unset: not given); maxRestarts: --max-restarts.
	until       string
	minPods     int
	maxRestarts int
	// once: --once, on the state before the run.
	once bool
	// targets: the run is about workloads (see world_test.go): each key
	// has an owner, each pod of the initial state a revision and a
	// restart count.
	targets         bool
	owners          map[int]string
	initialRev      map[int]int
	initialRestarts map[int]int32
	// startRev: the revision each workload target rolls out at the start.
	startRev map[string]int
	// controllers: without targets, what controls each key's pods:
	// nothing, a ReplicaSet (which replaces a Failed pod: it is left
	// behind, not judged) or a Job (which does not).
	controllers map[int]string
	// contexts: how many clusters the run watches, each with its own pods;
	// lostAtEnd (-1: none) is a context that loses its connection once its
	// pods are settled, and stays lost if staysLost.
	contexts  int
	lostAtEnd int
	staysLost bool
}

// formats are the outputs a history may print in; each shows, per
// message, whatever of kind, key, incarnation and state it can.
// strict-template cannot print a pod that is running but not ready (its
// template needs an annotation such pods lack): those messages are
// reported on stderr, and must still be judged.
var formats = []string{"table", "wide", "json", "yaml", "name", "go-template", "jsonpath", "custom-columns", "strict-template"}

// key names key index i: its namespace, and its name, which starts with
// its context's letter (p, q, r) so that names are unique across contexts.
func (h *history) key(i int) string {
	per := len(h.namespaces) * len(h.names)
	c, i := i/per, i%per
	return h.namespaces[i%len(h.namespaces)] + "/" + string(rune('p'+c)) + h.names[i/len(h.namespaces)][1:]
}

func (h *history) keys() int { return len(h.namespaces) * len(h.names) * h.contexts }

// allNamespaces: the run watches every namespace. -o name prints no
// namespace, so it watches one.
func (h *history) allNamespaces() bool { return len(h.namespaces) > 1 }

// generate builds a history from a seed.
func generate(seed uint64) *history {
	return generateFrom(rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), seed)
}

// generateFrom builds a history from any source of randomness (the fuzzer's
// bytes, for FuzzModel).
func generateFrom(r *rand.Rand, seed uint64) *history {
	h := &history{
		seed:      seed,
		names:     []string{"p0", "p1", "p2", "p3", "p4"}[:2+r.IntN(4)],
		workers:   1 + r.IntN(8),
		watchOnly: r.IntN(3) == 0,
		format:    formats[r.IntN(len(formats))],
		check:     r.IntN(2) == 0,
		resync:    r.IntN(10) == 0,
		initial:   map[int]podState{},
		pageSize:  r.IntN(4),
		// Most runs read rows as users' runs do.
		production: r.IntN(4) != 0,
	}
	h.failFirstList = h.pageSize > 0 && r.IntN(5) == 0
	h.until, h.minPods, h.maxRestarts = "ready", check.Unset, check.Unset
	if r.IntN(4) == 0 {
		h.until = "gone"
	}
	if h.until == "ready" && r.IntN(2) == 0 {
		// --until gone takes no --min-pods: it waits for none.
		h.minPods = r.IntN(4)
	}
	if r.IntN(4) == 0 {
		h.maxRestarts = r.IntN(3)
	}
	h.contexts, h.lostAtEnd = 1, -1
	switch r.IntN(8) {
	case 0:
		h.once, h.failFirstList = true, false
	case 1, 2:
		h.targets = true
	case 3, 4:
		h.contexts = 2 + r.IntN(2)
		// A list that fails before any succeeded is a cluster that cannot
		// be used: exit 1.
		h.failFirstList = false
		if h.check && r.IntN(3) != 0 {
			h.lostAtEnd, h.staysLost = r.IntN(h.contexts), r.IntN(3) == 0
		}
	}
	h.namespaces = []string{"a"}
	if h.format != "name" && !h.targets && r.IntN(3) == 0 {
		h.namespaces = []string{"a", "b"}
	}
	h.initialRev, h.initialRestarts = map[int]int{}, map[int]int32{}
	if h.targets {
		h.owners = map[int]string{}
		h.startRev = map[string]int{"web": 1 + r.IntN(2), "db": 1 + r.IntN(2), "ds": 1 + r.IntN(2)}
		if len(h.names) < 4 {
			h.names = []string{"p0", "p1", "p2", "p3"}
		}
		for k := range h.keys() {
			h.owners[k] = owners[r.IntN(len(owners))]
		}
		// Enough names for what the workloads want.
		h.owners[0], h.owners[1], h.owners[2], h.owners[3] = "web", "db", "db", "ds"
	}
	if !h.targets {
		h.controllers = map[int]string{}
		for k := range h.keys() {
			h.controllers[k] = []string{"", "", "replicaset", "job"}[r.IntN(4)]
		}
	}
	for k := range h.keys() {
		if r.IntN(2) == 0 {
			h.initial[k] = randomState(r, h)
			h.initialRev[k] = 1 + r.IntN(2)
			h.initialRestarts[k] = []int32{0, 0, 1, 3}[r.IntN(4)]
		}
	}
	if !h.once {
		// --once ends with its list: what follows is never seen.
		h.ops = randomOps(r, h)
	}
	return h
}

func randomState(r *rand.Rand, h *history) podState {
	// Failures are rarer than the rest, so that most checks run to the end;
	// rarer still over several contexts, which hold more pods.
	if r.IntN(12*h.contexts*h.contexts) == 0 {
		return []podState{crashLooping, failedPhase, evicted}[r.IntN(3)]
	}
	return []podState{creating, runningReady, runningReady, runningNotReady, succeeded, terminating}[r.IntN(6)]
}

func randomOps(r *rand.Rand, h *history) []op {
	n := 5 + r.IntN(40)
	exists := map[int]bool{}
	for k := range h.initial {
		exists[k] = true
	}
	var ops []op
	down := map[int]bool{}
	for range n {
		k, c := r.IntN(h.keys()), r.IntN(h.contexts)
		rev := 1 + r.IntN(2)
		switch roll := r.IntN(100); {
		case roll < 6:
			ops = append(ops, op{step: opCut, ctx: c})
		case roll < 9:
			ops = append(ops, op{step: opCompact, ctx: c})
		case roll < 20:
			ops = append(ops, op{step: opPause, pause: time.Duration(r.IntN(20)) * time.Millisecond})
		case roll < 26 && h.targets:
			ops = append(ops, op{step: opRevision, key: r.IntN(len(workloads)), rev: rev})
		case roll < 26 && h.contexts > 1:
			kind := opDisconnect
			if down[c] {
				kind = opReconnect
			}
			down[c] = !down[c]
			ops = append(ops, op{step: kind, ctx: c})
		case !exists[k]:
			ops = append(ops, op{step: opCreate, key: k, state: randomState(r, h), rev: rev})
			exists[k] = true
		case roll < 30:
			ops = append(ops, op{step: opDelete, key: k})
			exists[k] = false
		case roll < 38:
			ops = append(ops, op{step: opRecreate, key: k, state: randomState(r, h), rev: rev})
		default:
			ops = append(ops, op{step: opUpdate, key: k, state: randomState(r, h), restarts: []int32{0, 0, 0, 0, 1, 2}[r.IntN(6)]})
		}
	}
	for c := range down {
		if down[c] {
			ops = append(ops, op{step: opReconnect, ctx: c})
		}
	}
	if h.check && (r.IntN(2) == 0 || h.lostAtEnd >= 0) {
		// So that many checks can be met (and a lost context is what
		// holds one back).
		ops = append(ops, op{step: opTidy})
	}
	if h.check && h.targets && r.IntN(3) == 0 {
		ops = append(ops, op{step: opRollBack, key: r.IntN(len(workloads))})
	}
	if h.resync {
		// A resync happens only after its period: wait it out once.
		ops = append(ops, op{step: opPause, pause: 1100 * time.Millisecond})
	}
	return ops
}

func (h *history) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: -o %s, %d workers, watch-only %v, check %v, resync %v, namespaces %v, pages of %d, first list fails %v, production rows %v, --until %s --min-pods %d --max-restarts %d, --once %v, %d contexts (lost at the end: %d, for good: %v), targets %v %v\n",
		h.seed, h.format, h.workers, h.watchOnly, h.check, h.resync, h.namespaces, h.pageSize, h.failFirstList, h.production, h.until, h.minPods,
		h.maxRestarts, h.once, h.contexts, h.lostAtEnd, h.staysLost, h.targets, h.startRev)
	for k := range h.keys() {
		if st, ok := h.initial[k]; ok {
			fmt.Fprintf(&b, "  before: %s %s%s, %d restarts\n", h.key(k), st, h.ownerText(k, h.initialRev[k]), h.initialRestarts[k])
		}
	}
	for _, o := range h.ops {
		switch o.step {
		case opCreate:
			fmt.Fprintf(&b, "  create %s %s%s\n", h.key(o.key), o.state, h.ownerText(o.key, o.rev))
		case opUpdate:
			fmt.Fprintf(&b, "  update %s %s, +%d restarts\n", h.key(o.key), o.state, o.restarts)
		case opDelete:
			fmt.Fprintf(&b, "  delete %s\n", h.key(o.key))
		case opRecreate:
			fmt.Fprintf(&b, "  recreate %s %s%s\n", h.key(o.key), o.state, h.ownerText(o.key, o.rev))
		case opCut:
			fmt.Fprintf(&b, "  cut the watch of context %d\n", o.ctx)
		case opCompact:
			fmt.Fprintf(&b, "  compact and cut context %d: relist\n", o.ctx)
		case opPause:
			fmt.Fprintf(&b, "  pause %s\n", o.pause)
		case opRevision:
			fmt.Fprintf(&b, "  %s rolls out revision %d\n", workloads[o.key], o.rev)
		case opDisconnect:
			fmt.Fprintf(&b, "  context %d disconnects\n", o.ctx)
		case opReconnect:
			fmt.Fprintf(&b, "  context %d reconnects\n", o.ctx)
		case opTidy:
			b.WriteString("  tidy: every pod judged becomes ready, the rollouts complete\n")
		case opRollBack:
			fmt.Fprintf(&b, "  %s rolls out, its pod left behind crash-loops, and it rolls back to it\n", workloads[o.key])
		}
	}
	return b.String()
}

// outputArgs are the print flags of the history's format; every format
// shows the inc and rv labels where it can show anything of the pod.
func (h *history) outputArgs() []string {
	const fields = `{.metadata.namespace} {.metadata.name} {.metadata.labels.inc} {.metadata.labels.rv}{"\n"}`
	switch h.format {
	case "table":
		return []string{"-L", "inc,rv"}
	case "wide":
		return []string{"-o", "wide", "-L", "inc,rv"}
	case "go-template":
		return []string{"-o", `go-template={{.metadata.namespace}} {{.metadata.name}} {{index .metadata.labels "inc"}} {{index .metadata.labels "rv"}}{{"\n"}}`}
	case "jsonpath":
		return []string{"-o", "jsonpath=" + fields}
	case "strict-template":
		return []string{"--allow-missing-template-keys=false", "-o",
			`go-template={{.metadata.namespace}} {{.metadata.name}} {{.metadata.labels.inc}} {{.metadata.labels.rv}}{{.metadata.annotations.printable}}{{"\n"}}`}
	case "custom-columns":
		return []string{"-o", "custom-columns=NS:.metadata.namespace,NAME:.metadata.name,INC:.metadata.labels.inc,RV:.metadata.labels.rv"}
	}
	return []string{"-o", h.format}
}

// sentinel is a pod that keeps a check from being met while the history
// plays; it is deleted once the stream has settled, so the check is judged
// on the settled state.
const sentinel = "a/zz-sentinel"

// lockedBuffer is written by the run and read by the test meanwhile.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// result is what a played history left: the outcome, what was printed,
// the truth, and whether the run ended by itself before the end.
type result struct {
	h       *history
	outcome podsync.Outcome
	stdout  string
	stderr  string
	truth   *truth
	settled bool
	early   bool // the run ended before the history was played out
	// metWhileLost: the run ended met while a context was disconnected.
	metWhileLost bool
}

// player is a history being played: one sim per context, the workloads
// of a history about targets, and the run.
type player struct {
	h      *history
	sims   []*sim
	world  *world
	tr     *truth
	res    *result
	stdout *lockedBuffer
	stderr *lockedBuffer
	done   chan podsync.Outcome
}

// simOf is the sim of the context of key.
func (p *player) simOf(key string) *sim {
	_, name, _ := strings.Cut(key, "/")
	if c, ok := strings.CutPrefix(name, "zz-sentinel-"); ok {
		n, _ := strconv.Atoi(c)
		return p.sims[n]
	}
	if isSentinel(key) {
		return p.sims[0]
	}
	return p.sims[int(name[0]-'p')]
}

// sentinelOf is the sentinel of context c.
func sentinelOf(c int) string {
	if c == 0 {
		return sentinel
	}
	return fmt.Sprintf("%s-%d", sentinel, c)
}

func (p *player) put(key string, st podState, rev int, restarts int32) {
	p.tr.put(p.simOf(key), key, st, rev, restarts)
}

// play runs the history through a podsync run.
func play(h *history) (*result, error) {
	p := &player{h: h, done: make(chan podsync.Outcome, 1)}
	tr := newTruth(h)
	p.tr = tr
	for range h.contexts {
		s := newSim(h.format == "table" || h.format == "wide")
		s.pageSize, s.failFirstList = h.pageSize, h.failFirstList
		s.production = h.production
		p.sims = append(p.sims, s)
	}
	for k := range h.keys() {
		if st, ok := h.initial[k]; ok {
			p.put(h.key(k), st, h.initialRev[k], h.initialRestarts[k])
		}
	}
	if h.check && !h.once {
		for c := range h.contexts {
			p.put(sentinelOf(c), runningNotReady, 1, 0)
		}
	}
	if h.targets {
		p.world = newWorld(tr, h.once)
	}
	cfg, stdout, stderr, err := h.config()
	if err != nil {
		return nil, err
	}
	p.stdout, p.stderr = stdout, stderr
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := p.done
	clusters := p.clusters()
	go func() { done <- podsync.Run(ctx, cfg, clusters...) }()
	res := &result{h: h, truth: tr}
	p.res = res
	listed := func() bool {
		for _, s := range p.sims {
			select {
			case <-s.listed:
				return true
			default:
			}
		}
		return false
	}
wait:
	for _, s := range p.sims {
		select {
		case <-s.listed:
		case out := <-done:
			// A check that failed on a first page, or on the first list of
			// one context before another listed.
			done <- out
			if !listed() {
				return nil, fmt.Errorf("the run ended before it listed: %+v\n%s", out, stderr)
			}
			break wait
		case <-time.After(time.Minute):
			return nil, fmt.Errorf("no list within a minute")
		}
	}
	ended := p.apply()
	if ended == nil {
		res.settled, ended = p.waitSettled()
	}
	if ended != nil {
		// A check that failed fast: what follows was never printed.
		res.outcome, res.early = *ended, true
	} else {
		res.outcome = p.finish(cancel)
	}
	res.stdout, res.stderr = stdout.String(), stderr.String()
	tr.markInitial(p.simOf)
	return res, nil
}

// clusters are the run's clusters: one per context, each its own sim.
// With several, the run's connection hears each sim's requests, as it
// hears a built source's.
func (p *player) clusters() []podsync.Cluster {
	if len(p.sims) == 1 {
		c := podsync.Cluster{Source: p.sims[0].source()}
		if p.world != nil {
			c.Clients = &podsync.Clients{Kube: p.world.api, KubeWatch: p.world.api}
		}
		return []podsync.Cluster{c}
	}
	var out []podsync.Cluster
	for i, s := range p.sims {
		out = append(out, podsync.Cluster{Name: fmt.Sprintf("c%d", i), Dial: func(r source.Reporter) source.Source {
			s.reporter = r
			return s.source().Retrying(retry.Backoff())
		}})
	}
	return out
}

// apply plays the steps; it stops early if the run ends (a check that
// failed fast) and returns that outcome.
func (p *player) apply() *podsync.Outcome {
	h, tr := p.h, p.tr
	for _, o := range h.ops {
		select {
		case out := <-p.done:
			return &out
		default:
		}
		key := h.key(o.key)
		sim := p.simOf(key)
		switch o.step {
		case opCreate:
			if sim.get(key) == nil {
				p.put(key, o.state, o.rev, 0)
			}
		case opUpdate:
			if sim.get(key) != nil {
				p.put(key, o.state, 0, o.restarts)
			}
		case opDelete:
			if sim.get(key) != nil {
				tr.remove(sim, key)
			}
		case opRecreate:
			if sim.get(key) != nil {
				tr.remove(sim, key)
			}
			p.put(key, o.state, o.rev, 0)
		case opCut:
			p.sims[o.ctx].cut()
		case opCompact:
			p.sims[o.ctx].compact()
			p.sims[o.ctx].cut()
		case opPause:
			time.Sleep(o.pause)
		case opRevision:
			if out := p.rollOut(workloads[o.key], o.rev); out != nil {
				return out
			}
		case opDisconnect:
			p.sims[o.ctx].disconnect()
		case opReconnect:
			p.sims[o.ctx].reconnect()
		case opTidy:
			p.tidy()
		case opRollBack:
			if out := p.rollBack(workloads[o.key]); out != nil {
				return out
			}
		}
	}
	return nil
}

// tidy makes every pod judged ready. With targets, it completes the
// rollouts as their controllers would: a pod of a revision being replaced
// is replaced by one of the current revision, web keeps as many pods as
// it wants, and db gets as many as it wants. Pods no target owns stay as
// they are: they must not matter.
func (p *player) tidy() {
	h, tr := p.h, p.tr
	have := map[string]int32{}
	for k := range h.keys() {
		key := h.key(k)
		sim := p.simOf(key)
		owner := tr.ownerOf(key)
		present := sim.get(key) != nil
		switch {
		case !tr.judged(key):
		case owner == "" && present && tr.leftBehind(key):
			// Its controller made another pod: the sim has none to make.
		case owner == "" && present:
			p.put(key, runningReady, 0, 0)
		case owner == "":
		case have[owner] >= desired[owner]:
			if present {
				tr.remove(sim, key)
			}
		default:
			rev := tr.current[owner]
			if present && tr.revOf(key) != rev {
				tr.remove(sim, key)
			}
			p.put(key, runningReady, rev, 0)
			have[owner]++
		}
	}
}

// rollOut has workload roll out revision rev, once the run has seen the
// pods as they are: the model judges each state of a pod against the
// revision rolled out at that moment, and the run can only judge the
// states its watch has brought.
func (p *player) rollOut(workload string, rev int) *podsync.Outcome {
	if _, out := p.waitSettled(); out != nil {
		return out
	}
	if err := p.world.rollOut(workload, rev); err != nil {
		panic(err)
	}
	p.tr.rollOut(workload, rev)
	return nil
}

// rollBack plays a fix rolled out over a pod and rolled back: one of
// workload's pods is left behind by a rollout to the other revision, then
// crash-loops (spared: it is being replaced), and the workload rolls back
// to it: from then on it fails the check, without any change of its own.
func (p *player) rollBack(workload string) *podsync.Outcome {
	h, tr := p.h, p.tr
	key := ""
	for k := range h.keys() {
		if h.owners[k] == workload && (key == "" || p.simOf(h.key(k)).get(h.key(k)) != nil) {
			key = h.key(k)
		}
	}
	if p.simOf(key).get(key) == nil {
		p.put(key, runningReady, tr.current[workload], 0)
	}
	rev := tr.revOf(key)
	if out := p.rollOut(workload, 3-rev); out != nil {
		return out
	}
	p.put(key, crashLooping, 0, 0)
	return p.rollOut(workload, rev)
}

// settleTime bounds, on the bubble's clock, how long a played history may
// take to show its final state: work takes none of it, only the run's
// timers do (the reflector's back-off after a failed list, the resync).
const settleTime = 45 * time.Second

// waitSettled waits until every sim that is up has sent every change to
// an open watch, and the printed stream shows the final state of every pod
// and has stayed so while the clock moved on (a timer still set, a retry
// or a back-off, could print more); it returns the outcome instead if the
// run ends meanwhile.
func (p *player) waitSettled() (bool, *podsync.Outcome) {
	deadline := time.Now().Add(settleTime)
	last, quietSince := "", time.Now()
	for ; time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		// What the stream shows is only worth judging once every goroutine
		// of the run waits for something that the history or the clock
		// has yet to give.
		synctest.Wait()
		select {
		case out := <-p.done:
			return false, &out
		default:
		}
		text := p.stdout.String()
		if text != last || !p.caughtUp() {
			last, quietSince = text, time.Now()
			continue
		}
		obs, err := parse(p.h, text)
		p.tr.markInitial(p.simOf)
		if err == nil && time.Since(quietSince) > 150*time.Millisecond && len(finalGaps(p.h, p.tr, obs)) == 0 {
			return true, nil
		}
	}
	if os.Getenv("PODSYNC_MODEL_DEBUG") != "" {
		obs, err := parse(p.h, p.stdout.String())
		fmt.Fprintf(os.Stderr, "not settled: caught up %v, parse %v, gaps %v\n", p.caughtUp(), err, finalGaps(p.h, p.tr, obs))
	}
	return false, nil
}

// caughtUp: every sim that is up has sent every change to an open watch.
func (p *player) caughtUp() bool {
	for _, s := range p.sims {
		if !s.isDown() && !s.caughtUp() {
			return false
		}
	}
	return true
}

// finish ends the run: for a check it deletes the sentinels and gives the
// run a moment to be met; otherwise, or when it is not met, it ends the
// run as --timeout would. With targets, the workloads' controllers first
// report the pods left. A context lost at the end loses its connection
// once its sentinel is gone and printed so: the run must not be met while
// it is lost; it reconnects, unless it stays lost.
func (p *player) finish(cancel context.CancelCauseFunc) podsync.Outcome {
	h := p.h
	ended := func() (podsync.Outcome, bool) {
		select {
		case out := <-p.done:
			return out, true
		default:
			return podsync.Outcome{}, false
		}
	}
	if h.check && !h.once {
		if out, ok := ended(); ok {
			return out
		}
		if p.world != nil {
			if err := p.world.finish(p.tr); err != nil {
				panic(err)
			}
			// The run must have heard the final status before the
			// sentinels go, or the check would be judged without it.
			synctest.Wait()
		}
		if h.lostAtEnd >= 0 {
			lost := p.sims[h.lostAtEnd]
			p.tr.remove(lost, sentinelOf(h.lostAtEnd))
			if _, out := p.waitSettled(); out != nil {
				return *out
			}
			// The run knows of it once a request fails: until then, no
			// one could tell.
			said := fmt.Sprintf("lost the connection to the API server of context c%d", h.lostAtEnd)
			before := strings.Count(p.stderr.String(), said)
			lost.disconnect()
			// The next request may wait for a back-off: the clock moves on
			// whenever the run has nothing else to do.
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				synctest.Wait()
				if strings.Count(p.stderr.String(), said) != before {
					break
				}
			}
		}
		for c := range h.contexts {
			if c != h.lostAtEnd {
				p.tr.remove(p.sims[c], sentinelOf(c))
			}
		}
		// The bubble's clock gives the run as long as it takes to be met,
		// and then some: it moves only once the run waits.
		select {
		case out := <-p.done:
			if h.lostAtEnd >= 0 && out.Verdict == podsync.Met {
				p.res.metWhileLost = true
			}
			return out
		case <-time.After(400 * time.Millisecond):
		}
		if h.lostAtEnd >= 0 && !h.staysLost {
			p.sims[h.lostAtEnd].reconnect()
		}
		// The deletion of the sentinels must have been printed too.
		if _, out := p.waitSettled(); out != nil {
			if h.staysLost && out.Verdict == podsync.Met {
				p.res.metWhileLost = true
			}
			return *out
		}
	}
	if out, ok := ended(); ok {
		return out
	}
	cancel(podsync.ErrTimeout)
	select {
	case out := <-p.done:
		return out
	case <-time.After(time.Minute):
		return podsync.Outcome{Verdict: podsync.Broken, Err: fmt.Errorf("the run did not end within a minute of its timeout")}
	}
}

// config builds the run's Config and its output buffers.
func (h *history) config() (podsync.Config, *lockedBuffer, *lockedBuffer, error) {
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	pf := get.NewGetPrintFlags()
	c := &cobra.Command{}
	pf.AddFlags(c)
	if err := c.ParseFlags(h.outputArgs()); err != nil {
		return podsync.Config{}, nil, nil, err
	}
	var contexts []string
	for i := range h.contexts {
		contexts = append(contexts, fmt.Sprintf("c%d", i))
	}
	w, err := output.New(output.Options{PrintFlags: pf, AllNamespaces: h.allNamespaces(), WatchOnly: h.watchOnly, Out: stdout, Contexts: contexts})
	if err != nil {
		return podsync.Config{}, nil, nil, err
	}
	flags := check.Flags{MinPods: check.Unset, MaxRestarts: check.Unset}
	if h.check {
		flags.Until, flags.UntilSet, flags.MinPods, flags.MaxRestarts = h.until, true, h.minPods, h.maxRestarts
	}
	spec, err := flags.Spec()
	if err != nil {
		return podsync.Config{}, nil, nil, err
	}
	scope := podsync.Scope{Namespace: "a", LabelSelector: "app=sim"}
	if h.allNamespaces() {
		scope = podsync.Scope{AllNamespaces: true, LabelSelector: "app=sim"}
	}
	cfg := podsync.Config{
		Scope: scope, Output: w, Stdout: stdout, ErrOut: stderr, Check: spec,
		Workers: h.workers, MaxRetries: 5, WatchOnly: h.watchOnly, Once: h.once,
	}
	if h.targets {
		cfg.Scope, cfg.Targets = podsync.Scope{Namespace: "a"}, modelTargets
	}
	if h.resync {
		cfg.Resync = time.Second
	}
	return cfg, stdout, stderr, nil
}
