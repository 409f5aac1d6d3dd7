package podsync_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/output"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
)

// The model-based test: random histories of pod changes, played by the
// sim against the real controller, queue, workers, writer and check of a
// podsync run, and an oracle that holds the printed stream against what
// really happened. See checkRun for what it requires.

// opKind is one step of a history.
type opKind int

const (
	opCreate   opKind = iota // a pod of an absent name
	opUpdate                 // a new state (or the same, with another annotation)
	opDelete                 // the pod is deleted
	opRecreate               // deleted and created again under the same name at once
	opCut                    // every watch is cut; the reflector resumes
	opCompact                // the log is compacted, then every watch is cut: relist
	opPause                  // the history waits
)

type op struct {
	kind  opKind
	key   int
	state podState
	pause time.Duration
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
	// --min-pods (check.Unset: not given).
	until   string
	minPods int
}

// formats are the outputs a history may print in; each shows, per
// message, whatever of kind, key, incarnation and state it can.
// strict-template cannot print a pod that is running but not ready (its
// template needs an annotation such pods lack): those messages are
// reported on stderr, and must still be judged.
var formats = []string{"table", "wide", "json", "yaml", "name", "go-template", "jsonpath", "custom-columns", "strict-template"}

func (h *history) key(i int) string {
	return h.namespaces[i%len(h.namespaces)] + "/" + h.names[i/len(h.namespaces)]
}

func (h *history) keys() int { return len(h.namespaces) * len(h.names) }

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
	h.until, h.minPods = "ready", check.Unset
	if r.IntN(4) == 0 {
		h.until = "gone"
	}
	if h.until == "ready" && r.IntN(2) == 0 {
		// --until gone takes no --min-pods: it waits for none.
		h.minPods = r.IntN(4)
	}
	h.namespaces = []string{"a"}
	if h.format != "name" && r.IntN(3) == 0 {
		h.namespaces = []string{"a", "b"}
	}
	for k := range h.keys() {
		if r.IntN(2) == 0 {
			h.initial[k] = randomState(r)
		}
	}
	h.ops = randomOps(r, h)
	return h
}

func randomState(r *rand.Rand) podState {
	// Failures are rarer than the rest, so that most checks run to the end.
	if r.IntN(12) == 0 {
		return []podState{crashLooping, failedPhase}[r.IntN(2)]
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
	for range n {
		k := r.IntN(h.keys())
		switch roll := r.IntN(100); {
		case roll < 6:
			ops = append(ops, op{kind: opCut})
		case roll < 9:
			ops = append(ops, op{kind: opCompact})
		case roll < 20:
			ops = append(ops, op{kind: opPause, pause: time.Duration(r.IntN(20)) * time.Millisecond})
		case !exists[k]:
			ops = append(ops, op{kind: opCreate, key: k, state: randomState(r)})
			exists[k] = true
		case roll < 30:
			ops = append(ops, op{kind: opDelete, key: k})
			exists[k] = false
		case roll < 38:
			ops = append(ops, op{kind: opRecreate, key: k, state: randomState(r)})
		default:
			ops = append(ops, op{kind: opUpdate, key: k, state: randomState(r)})
		}
	}
	if h.resync {
		// A resync happens only after its period: wait it out once.
		ops = append(ops, op{kind: opPause, pause: 1100 * time.Millisecond})
	}
	return ops
}

func (h *history) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: -o %s, %d workers, watch-only %v, check %v, resync %v, namespaces %v, pages of %d, first list fails %v, production rows %v, --until %s --min-pods %d\n",
		h.seed, h.format, h.workers, h.watchOnly, h.check, h.resync, h.namespaces, h.pageSize, h.failFirstList, h.production, h.until, h.minPods)
	for k := range h.keys() {
		if st, ok := h.initial[k]; ok {
			fmt.Fprintf(&b, "  before: %s %s\n", h.key(k), st)
		}
	}
	for _, o := range h.ops {
		switch o.kind {
		case opCreate:
			fmt.Fprintf(&b, "  create %s %s\n", h.key(o.key), o.state)
		case opUpdate:
			fmt.Fprintf(&b, "  update %s %s\n", h.key(o.key), o.state)
		case opDelete:
			fmt.Fprintf(&b, "  delete %s\n", h.key(o.key))
		case opRecreate:
			fmt.Fprintf(&b, "  recreate %s %s\n", h.key(o.key), o.state)
		case opCut:
			b.WriteString("  cut the watch\n")
		case opCompact:
			b.WriteString("  compact and cut: relist\n")
		case opPause:
			fmt.Fprintf(&b, "  pause %s\n", o.pause)
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
}

// play runs the history through a podsync run.
func play(h *history) (*result, error) {
	sim := newSim(h.format == "table" || h.format == "wide")
	sim.pageSize, sim.failFirstList = h.pageSize, h.failFirstList
	sim.production = h.production
	tr := newTruth()
	for k := range h.keys() {
		if st, ok := h.initial[k]; ok {
			tr.put(sim, h.key(k), st)
		}
	}
	if h.check {
		tr.put(sim, sentinel, runningNotReady)
	}
	cfg, stdout, stderr, err := h.config()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan podsync.Outcome, 1)
	go func() { done <- podsync.Run(ctx, cfg, podsync.Cluster{Source: sim.source()}) }()
	res := &result{h: h, truth: tr}
	select {
	case <-sim.listed:
	case out := <-done:
		select {
		case <-sim.listed: // a check that failed on the first page
			done <- out
		default:
			return nil, fmt.Errorf("the run ended before it listed: %+v", out)
		}
	case <-time.After(time.Minute):
		return nil, fmt.Errorf("no list within a minute")
	}
	ended := h.apply(sim, tr, done)
	if ended == nil {
		res.settled, ended = waitSettled(res, sim, stdout, done)
	}
	if ended != nil {
		// A check that failed fast: what follows was never printed.
		res.outcome, res.early = *ended, true
	} else {
		res.outcome = finish(res, sim, tr, stdout, done, cancel)
	}
	res.stdout, res.stderr = stdout.String(), stderr.String()
	tr.markInitial(sim)
	return res, nil
}

// apply plays the steps; it stops early if the run ends (a check that
// failed fast) and returns that outcome.
func (h *history) apply(sim *sim, tr *truth, done chan podsync.Outcome) *podsync.Outcome {
	for _, o := range h.ops {
		select {
		case out := <-done:
			return &out
		default:
		}
		key := h.key(o.key)
		switch o.kind {
		case opCreate:
			if sim.get(key) == nil {
				tr.put(sim, key, o.state)
			}
		case opUpdate:
			if sim.get(key) != nil {
				tr.put(sim, key, o.state)
			}
		case opDelete:
			if sim.get(key) != nil {
				tr.remove(sim, key)
			}
		case opRecreate:
			if sim.get(key) != nil {
				tr.remove(sim, key)
			}
			tr.put(sim, key, o.state)
		case opCut:
			sim.cut()
		case opCompact:
			sim.compact()
			sim.cut()
		case opPause:
			time.Sleep(o.pause)
		}
	}
	return nil
}

// settleTime bounds how long a played history may take to show its final
// state; under the race detector with many histories at once a relist
// alone takes a few seconds.
const settleTime = 45 * time.Second

// waitSettled waits until the sim has sent every change to an open watch,
// and the printed stream shows the final state of every pod and has been
// quiet for a moment since; it returns the outcome instead if the run ends
// meanwhile.
func waitSettled(res *result, sim *sim, stdout *lockedBuffer, done chan podsync.Outcome) (bool, *podsync.Outcome) {
	deadline := time.Now().Add(settleTime)
	last, quietSince := "", time.Now()
	for time.Now().Before(deadline) {
		select {
		case out := <-done:
			return false, &out
		case <-time.After(20 * time.Millisecond):
		}
		text := stdout.String()
		if text != last || !sim.caughtUp() {
			last, quietSince = text, time.Now()
			continue
		}
		obs, err := parse(res.h, text)
		res.truth.markInitial(sim)
		if err == nil && time.Since(quietSince) > 150*time.Millisecond && len(finalGaps(res.h, res.truth, obs, false)) == 0 {
			return true, nil
		}
	}
	if os.Getenv("PODSYNC_MODEL_DEBUG") != "" {
		obs, err := parse(res.h, stdout.String())
		fmt.Fprintf(os.Stderr, "not settled: caught up %v, parse %v, gaps %v\n", sim.caughtUp(), err, finalGaps(res.h, res.truth, obs, false))
	}
	return false, nil
}

// finish ends the run: for a check it deletes the sentinel and gives the
// run a moment to be met; otherwise, or when it is not met, it ends the
// run as --timeout would.
func finish(res *result, sim *sim, tr *truth, stdout *lockedBuffer, done chan podsync.Outcome, cancel context.CancelCauseFunc) podsync.Outcome {
	if res.h.check {
		select {
		case out := <-done:
			return out
		default:
		}
		tr.remove(sim, sentinel)
		select {
		case out := <-done:
			return out
		case <-time.After(400 * time.Millisecond):
		}
		// The deletion of the sentinel must have been printed too.
		if _, ended := waitSettled(res, sim, stdout, done); ended != nil {
			return *ended
		}
	}
	select {
	case out := <-done:
		return out
	default:
	}
	cancel(podsync.ErrTimeout)
	select {
	case out := <-done:
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
	w, err := output.New(output.Options{PrintFlags: pf, AllNamespaces: h.allNamespaces(), WatchOnly: h.watchOnly, Out: stdout})
	if err != nil {
		return podsync.Config{}, nil, nil, err
	}
	flags := check.Flags{MinPods: check.Unset, MaxRestarts: check.Unset}
	if h.check {
		flags.Until, flags.UntilSet, flags.MinPods = h.until, true, h.minPods
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
		Workers: h.workers, MaxRetries: 5, WatchOnly: h.watchOnly,
	}
	if h.resync {
		cfg.Resync = time.Second
	}
	return cfg, stdout, stderr, nil
}
