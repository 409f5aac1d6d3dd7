package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-podsync/kubectl-podsync/internal/exitcode"
	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
)

// watcher is a program the churn measures: it watches every pod and
// prints each change as JSON with the pod's metadata inside. podsync is
// measured beside kubectl's own watch and the floor's.
type watcher struct {
	id, label string
	argv      []string
	// fitsLike names the command whose memory the watcher needs as it
	// starts (kubectl lists every pod as JSON before it watches).
	fitsLike string
}

func (w watcher) isPodsync() bool { return w.id == "podsync" }

func (e *env) watchers() []watcher {
	out := []watcher{{id: "podsync", label: "`kubectl podsync -A --watch-only -o json`",
		argv: []string{e.kubectl, "podsync", "-A", "--watch-only", "-o", "json"}}}
	for _, id := range e.cfg.churnPeers {
		switch id {
		case "kubectl":
			out = append(out, watcher{id: id, label: "`kubectl get pods -A -w --watch-only --output-watch-events -o json`",
				argv:     []string{e.kubectl, "get", "pods", "-A", "-w", "--watch-only", "--output-watch-events", "-o", "json"},
				fitsLike: "kubectl-json"})
		case "floor":
			out = append(out, watcher{id: id, label: "floor: a protobuf watch printing one line of metadata per event",
				argv: e.floorArgs([]string{"-watch"})})
		}
	}
	for _, b := range e.cfg.compare {
		out = append(out, watcher{id: "podsync@" + b.name, label: "`kubectl podsync -A --watch-only -o json`, build " + b.name,
			argv: []string{e.kubectl, "podsync" + b.name, "-A", "--watch-only", "-o", "json"}})
	}
	return out
}

// churnPeerIDs are the watchers -churn-peers can add to podsync.
var churnPeerIDs = []string{"kubectl", "floor"}

// churnResult is one churn measurement.
type churnResult struct {
	Watcher watcher
	// NotRun says why the watcher did not run, or how it failed.
	NotRun        string
	Rate          float64 // asked
	Achieved      float64 // updates sent per second
	Duration      time.Duration
	Sent, Failed  int
	Pods          int // distinct pods the API shows changed
	Lines         int // UPDATE lines for those pods
	P50, P99, Max time.Duration
	// Write is the API's answer time for each update (sent to answered),
	// and AfterAck the lag from that answer to the printed line: the part
	// of the lag that is the watch and the watcher. It can be below zero when
	// the watch event overtakes the answer.
	WriteP50, WriteP99       time.Duration
	AfterAckP50, AfterAckP99 time.Duration
	AfterAckMax              time.Duration
	Over250ms                int
	Over1s                   int
	CPU                      time.Duration // the watcher's, from the first update to the last line
	Elapsed                  time.Duration // from the first update to the last line
	// APIServerCPU, EtcdCPU and BenchCPU are what kube-apiserver, etcd
	// and this program (the loader and the line reader) used meanwhile.
	APIServerCPU, EtcdCPU, BenchCPU time.Duration
	RSS                             int64         // the watcher's peak resident set at the end
	Drain                           time.Duration // last update sent to last needed line printed
	WatchReady                      time.Duration // the watcher's start to its first update printed
	Settled                         time.Duration // the wait for a quiet API server before the updates
	Lost                            int
	LostExamples                    []string
	ExitCode                        int
}

// printed is what the watcher printed last for one pod.
type printed struct {
	rv   uint64
	sent string
}

// churnWatch reads the watcher's stdout and keeps what each event said.
type churnWatch struct {
	id       string // the watcher's
	sentinel string // key of the sentinel pod

	mu   sync.Mutex
	last map[string]printed
	lags []time.Duration
	// printedAt is when each key@resourceVersion was printed.
	printedAt map[string]time.Time
	lines     int
	seen      uint64 // newest sentinel value printed
	badLines  int
}

// stampedEvent is one printed event and when it arrived.
type stampedEvent struct {
	at time.Time
	ev eventLine
}

// eventLine is the part of a printed event the bench reads: podsync's
// UPDATE and kubectl's (and the floor's) MODIFIED carry the pod alike.
type eventLine struct {
	Type   string `json:"type"`
	Object struct {
		Metadata struct {
			Name            string            `json:"name"`
			Namespace       string            `json:"namespace"`
			ResourceVersion string            `json:"resourceVersion"`
			Annotations     map[string]string `json:"annotations"`
		} `json:"metadata"`
	} `json:"object"`
}

// read decodes each printed event, stamps it on arrival and hands it on,
// so that keeping it never holds up the pipe. The output is a stream of
// JSON values, one per line (podsync, the floor) or indented over many
// (kubectl); a value that is not an event ends the stream.
func (w *churnWatch) read(r io.Reader, events chan<- stampedEvent) {
	defer close(events)
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<20))
	for {
		var ev eventLine
		if err := dec.Decode(&ev); err != nil {
			if !errors.Is(err, io.EOF) {
				w.mu.Lock()
				w.badLines++
				w.mu.Unlock()
			}
			return
		}
		events <- stampedEvent{at: time.Now(), ev: ev}
	}
}

func (w *churnWatch) keep(events <-chan stampedEvent) {
	for l := range events {
		ev := l.ev
		md := ev.Object.Metadata
		key := md.Namespace + "/" + md.Name
		rv, _ := strconv.ParseUint(md.ResourceVersion, 10, 64)
		w.mu.Lock()
		switch {
		case key == w.sentinel:
			if v, err := strconv.ParseUint(md.Annotations[sentinelAnnotate], 10, 64); err == nil && v > w.seen {
				w.seen = v
			}
		case ev.Type == "UPDATE" || ev.Type == "MODIFIED":
			sent := md.Annotations[sentAnnotation]
			w.last[key] = printed{rv: rv, sent: sent}
			w.printedAt[key+"@"+md.ResourceVersion] = l.at
			w.lines++
			if t, err := time.Parse(time.RFC3339Nano, sent); err == nil {
				w.lags = append(w.lags, l.at.Sub(t))
			}
		}
		w.mu.Unlock()
	}
}

func (w *churnWatch) sentinelSeen() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}

// runChurn starts the watcher, waits until it watches, updates pods at
// rate for cfg.duration, waits for the watcher to print the final state
// of every updated pod, and checks that state against the API.
func (e *env) runChurn(ctx context.Context, l *loader, rate float64, wt watcher) (*churnResult, error) {
	cfg := e.cfg
	res := &churnResult{Rate: rate, Duration: cfg.duration, Watcher: wt}
	pctx, cancel := context.WithTimeout(ctx, cfg.duration+30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(pctx, wt.argv[0], wt.argv[1:]...)
	cmd.Env = e.environ()
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%s stdout: %w", wt.id, err)
	}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", wt.id, err)
	}
	w := &churnWatch{id: wt.id, sentinel: l.podKey(0), last: map[string]printed{}, printedAt: map[string]time.Time{}}
	events := make(chan stampedEvent, 1<<16)
	kept := make(chan struct{})
	go w.read(out, events)
	go func() { w.keep(events); close(kept) }()
	var waitErr error
	exited := make(chan struct{})
	go func() {
		<-kept // Wait closes the pipe: read it to the end first
		waitErr = cmd.Wait()
		close(exited)
	}()
	defer killUnlessExited(cmd, exited)

	if err := e.waitWatching(ctx, l, func() bool { return w.sentinelSeen() >= 1 }, exited); err != nil {
		return res, fmt.Errorf("%s: %w; stderr: %s", wt.id, err, tail(stderr.String()))
	}
	res.WatchReady = time.Since(started)
	e.logf("%s watches %d pods (after %s); churn at %g/s for %s", wt.id, l.total, res.WatchReady.Round(time.Millisecond), rate, cfg.duration)

	// Only the pods the churn will update are kept whole: at 150,000 pods
	// all of them would take gigabytes of the bench's memory.
	order := rand.Perm(l.total - 1)
	updated := map[string]bool{}
	for seq := range min(len(order), int(rate*cfg.duration.Seconds())) {
		updated[l.podKey(order[seq]+1)] = true
	}
	before := map[string]string{}
	latest := map[string]*corev1.Pod{}
	if err := eachPod(ctx, l.cs, metav1.ListOptions{}, func(p *corev1.Pod) {
		k := p.Namespace + "/" + p.Name
		before[k] = p.ResourceVersion
		if updated[k] {
			latest[k] = p.DeepCopy()
		}
	}); err != nil {
		return res, err
	}
	res.Settled = e.settle(ctx)
	pid := cmd.Process.Pid
	cpu0, err := procCPU(pid)
	if err != nil {
		return res, err
	}
	api0, etcd0, self0 := e.serverCPU()
	began := time.Now()
	final, acks, lastSent, err := e.churnLoad(ctx, l, order, latest, res)
	if err != nil {
		return res, err
	}
	drained := w.waitDrained(ctx, final, 60*time.Second)
	res.Drain = drained.Sub(lastSent)
	select {
	case <-exited:
		// Its CPU and peak are gone with it; what it said is not.
		return res, fmt.Errorf("%s ended during the churn (exit code %d): stderr: %s", wt.id, exitcode.Of(waitErr), tail(stderr.String()))
	default:
	}
	cpu1, err := procCPU(pid)
	if err != nil {
		return res, err
	}
	res.CPU, res.Elapsed = cpu1-cpu0, time.Since(began)
	api1, etcd1, self1 := e.serverCPU()
	res.APIServerCPU, res.EtcdCPU, res.BenchCPU = api1-api0, etcd1-etcd0, self1-self0
	if res.RSS, err = procHWM(pid); err != nil {
		return res, err
	}
	if err := w.check(ctx, l, before, res); err != nil {
		return res, err
	}
	w.summarize(res, acks)
	e.logf("churn, %s: %d updates, %d lines, p99 %s, max %s, lost %d", wt.id, res.Sent, res.Lines, ms(res.P99), ms(res.Max), res.Lost)

	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		res.ExitCode = exitcode.Of(waitErr)
	case <-time.After(30 * time.Second):
		return res, fmt.Errorf("%s did not end within 30s of SIGTERM", wt.id)
	}
	// kubectl ends with 1 on SIGTERM; only podsync's code is its contract.
	if wt.isPodsync() && res.ExitCode != 143 && res.ExitCode != 0 {
		return res, fmt.Errorf("%s ended with exit code %d after SIGTERM: %s", wt.id, res.ExitCode, tail(stderr.String()))
	}
	return res, nil
}

// Settling: a churn waits, for at most settleLimit, until the API server
// has used less than settleCPU in a second. One that starts while the
// server still works off what came before (a list just served, a
// client's garbage) measures that work as the churn's lag, and the
// watcher measured first would pay for it.
const (
	settleCPU   = 200 * time.Millisecond
	settleLimit = time.Minute
)

// settle returns how long the API server took to settle.
func (e *env) settle(ctx context.Context) time.Duration {
	pid := e.cluster.PIDs()[localcluster.APIServer]
	began := time.Now()
	for time.Since(began) < settleLimit {
		c0, err := procCPU(pid)
		if err != nil {
			break
		}
		select {
		case <-ctx.Done():
			return time.Since(began)
		case <-time.After(time.Second):
		}
		if c1, err := procCPU(pid); err != nil || c1-c0 < settleCPU {
			break
		}
	}
	return time.Since(began)
}

// serverCPU is the CPU time kube-apiserver, etcd and this program have
// used so far.
func (e *env) serverCPU() (api, etcd, self time.Duration) {
	pids := e.cluster.PIDs()
	api, _ = procCPU(pids[localcluster.APIServer])
	etcd, _ = procCPU(pids[localcluster.Etcd])
	self, _ = procCPU(os.Getpid())
	return api, etcd, self
}

// waitWatching updates the sentinel pod until seen says the watcher
// printed it: from then on the watcher has its initial list and watches.
func (e *env) waitWatching(ctx context.Context, l *loader, seen func() bool, exited <-chan struct{}) error {
	limit := 2*time.Minute + time.Duration(l.total)*5*time.Millisecond
	deadline := time.Now().Add(limit)
	ns, name := l.podNamespace(0), l.podName(0)
	for v := uint64(1); time.Now().Before(deadline); v++ {
		if err := annotatePod(ctx, l.cs, ns, name, sentinelAnnotate, strconv.FormatUint(v, 10)); err != nil {
			return fmt.Errorf("update the sentinel pod: %w", err)
		}
		for range 10 {
			select {
			case <-exited:
				return errors.New("it ended before it watched")
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
			if seen() {
				return nil
			}
		}
	}
	return fmt.Errorf("no update of the sentinel pod printed within %s", limit)
}

// killUnlessExited kills a client that has not exited, once it is no
// longer measured, and waits for it.
func killUnlessExited(cmd *exec.Cmd, exited <-chan struct{}) {
	select {
	case <-exited:
	default:
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
}

// sentUpdate is the newest accepted update of one pod.
type sentUpdate struct {
	rv   uint64
	sent string
}

// updater changes one pod's sent and seq annotations, by a JSON merge
// patch or by a protobuf update of the whole pod (which costs the API
// server less: no JSON round trip of the stored object).
type updater struct {
	cs     kubernetes.Interface
	method string
	mu     sync.Mutex
	pods   map[string]*corev1.Pod // newest known state, for updates
}

func (u *updater) update(ctx context.Context, ns, name string, seq int) (*corev1.Pod, time.Time, error) {
	pods := u.cs.CoreV1().Pods(ns)
	if u.method == "patch" {
		sentAt := time.Now()
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:%q}}}`, sentAnnotation, sentAt.Format(time.RFC3339Nano), seqAnnotation, strconv.Itoa(seq))
		pod, err := pods.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: fieldManager})
		return pod, sentAt, err
	}
	key := ns + "/" + name
	for attempt := 0; ; attempt++ {
		u.mu.Lock()
		pod := u.pods[key].DeepCopy()
		u.mu.Unlock()
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		sentAt := time.Now()
		pod.Annotations[sentAnnotation] = sentAt.Format(time.RFC3339Nano)
		pod.Annotations[seqAnnotation] = strconv.Itoa(seq)
		got, err := pods.Update(ctx, pod, metav1.UpdateOptions{FieldManager: fieldManager})
		if err == nil {
			u.remember(key, got)
			return got, sentAt, nil
		}
		if !apierrors.IsConflict(err) || attempt >= 3 {
			return nil, sentAt, err
		}
		// Another worker updated this pod meanwhile: start from its state.
		if got, err = pods.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return nil, sentAt, err
		}
		u.remember(key, got)
	}
}

// remember keeps the newer of two states of a pod.
func (u *updater) remember(key string, pod *corev1.Pod) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if old := u.pods[key]; old == nil || rvOf(pod) > rvOf(old) {
		u.pods[key] = pod
	}
}

func rvOf(p *corev1.Pod) uint64 {
	rv, _ := strconv.ParseUint(p.ResourceVersion, 10, 64)
	return rv
}

// ack is the API's answer to one update.
type ack struct {
	key, rv    string
	sent, done time.Time
}

// churnLoad updates pods at res.Rate for cfg.duration, round-robin over
// order, a shuffled order of every pod but the sentinel (index 0). It returns the newest
// accepted state of each updated pod, every answer, and when the last
// update was sent.
func (e *env) churnLoad(ctx context.Context, l *loader, order []int, latest map[string]*corev1.Pod, res *churnResult) (map[string]sentUpdate, []ack, time.Time, error) {
	cfg := e.cfg
	jobs := make(chan int, 4096)
	var mu sync.Mutex
	final := map[string]sentUpdate{}
	var acks []ack
	var failed atomic.Int64
	var firstErr error
	var wg sync.WaitGroup
	u := &updater{cs: l.cs, method: cfg.method, pods: latest}
	workers := min(64, max(4, int(res.Rate/25)))
	for range workers {
		wg.Go(func() {
			for seq := range jobs {
				i := order[seq%len(order)] + 1
				ns, name := l.podNamespace(i), l.podName(i)
				pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				pod, sentAt, err := u.update(pctx, ns, name, seq+1)
				done := time.Now()
				cancel()
				if err != nil {
					if failed.Add(1) == 1 {
						mu.Lock()
						firstErr = fmt.Errorf("update pod %s/%s: %w", ns, name, err)
						mu.Unlock()
					}
					continue
				}
				rv, _ := strconv.ParseUint(pod.ResourceVersion, 10, 64)
				key := ns + "/" + name
				mu.Lock()
				if rv > final[key].rv {
					final[key] = sentUpdate{rv: rv, sent: pod.Annotations[sentAnnotation]}
				}
				acks = append(acks, ack{key: key, rv: pod.ResourceVersion, sent: sentAt, done: done})
				mu.Unlock()
			}
		})
	}
	start := time.Now()
	interval := time.Duration(float64(time.Second) / res.Rate)
	total := int(res.Rate * cfg.duration.Seconds())
	sent := 0
feed:
	for seq := range total {
		if d := time.Until(start.Add(time.Duration(seq) * interval)); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				break feed
			}
		}
		select {
		case jobs <- seq:
			sent++
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	last := time.Now()
	res.Sent = sent
	res.Failed = int(failed.Load())
	res.Achieved = float64(sent) / last.Sub(start).Seconds()
	if ctx.Err() != nil {
		return final, acks, last, ctx.Err()
	}
	if firstErr != nil && res.Failed > sent/100 {
		return final, acks, last, fmt.Errorf("%d of %d updates failed, first: %w", res.Failed, sent, firstErr)
	}
	return final, acks, last, nil
}

// waitDrained waits until the watcher printed the newest state of every
// updated pod, or limit passes; it returns when that happened.
func (w *churnWatch) waitDrained(ctx context.Context, final map[string]sentUpdate, limit time.Duration) time.Time {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		w.mu.Lock()
		behind := 0
		for k, u := range final {
			if w.last[k].rv < u.rv {
				behind++
			}
		}
		w.mu.Unlock()
		if behind == 0 {
			return time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Now()
}

// check compares, for every pod the API shows changed since the churn
// began, the last state the watcher printed with the API's final state.
func (w *churnWatch) check(ctx context.Context, l *loader, before map[string]string, res *churnResult) error {
	type final struct {
		rv   uint64
		sent string
	}
	after := map[string]final{}
	if err := eachPod(ctx, l.cs, metav1.ListOptions{}, func(p *corev1.Pod) {
		k := p.Namespace + "/" + p.Name
		if k == w.sentinel || before[k] == p.ResourceVersion {
			return
		}
		rv, _ := strconv.ParseUint(p.ResourceVersion, 10, 64)
		after[k] = final{rv: rv, sent: p.Annotations[sentAnnotation]}
	}); err != nil {
		return err
	}
	keys := make([]string, 0, len(after))
	for k := range after {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	w.mu.Lock()
	defer w.mu.Unlock()
	res.Pods = len(keys)
	for _, k := range keys {
		want, got := after[k], w.last[k]
		if got.rv != want.rv || got.sent != want.sent {
			res.Lost++
			if len(res.LostExamples) < 5 {
				res.LostExamples = append(res.LostExamples, fmt.Sprintf("%s: the API has resourceVersion %d (sent %s), %s printed %d (sent %s)", k, want.rv, want.sent, w.id, got.rv, got.sent))
			}
		}
	}
	return nil
}

func (w *churnWatch) summarize(res *churnResult, acks []ack) {
	w.mu.Lock()
	defer w.mu.Unlock()
	res.Lines = w.lines
	lags := slices.Clone(w.lags)
	res.P50, res.P99, res.Max = percentiles(lags)
	var writes, afterAck []time.Duration
	for _, a := range acks {
		writes = append(writes, a.done.Sub(a.sent))
		if at, ok := w.printedAt[a.key+"@"+a.rv]; ok {
			afterAck = append(afterAck, at.Sub(a.done))
		}
	}
	res.WriteP50, res.WriteP99, _ = percentiles(writes)
	res.AfterAckP50, res.AfterAckP99, res.AfterAckMax = percentiles(afterAck)
	for _, d := range lags {
		if d > 250*time.Millisecond {
			res.Over250ms++
		}
		if d > time.Second {
			res.Over1s++
		}
	}
}

// percentiles sorts d and returns its p50, p99 and max.
func percentiles(d []time.Duration) (p50, p99, maxD time.Duration) {
	slices.Sort(d)
	n := len(d)
	if n == 0 {
		return 0, 0, 0
	}
	return d[n/2], d[min(n-1, n*99/100)], d[n-1]
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
