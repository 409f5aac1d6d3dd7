package soak

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// settings of one soak, from the environment (make soak sets them).
type settings struct {
	// duration of the churn (PODSYNC_SOAK_DURATION).
	duration time.Duration
	// warmUp is the first part of the churn, not measured: caches and
	// buffers grow to their size (PODSYNC_SOAK_WARMUP).
	warmUp time.Duration
	// pods held at every moment (PODSYNC_SOAK_PODS).
	pods int
	// steps of churn per second (PODSYNC_SOAK_STEPS): each is three
	// writes, a deletion, a creation and a relabel.
	steps float64
	// restartEvery is how often the API server podsync watches through is
	// killed and started again (PODSYNC_SOAK_RESTART_EVERY).
	restartEvery time.Duration
	// maxSlope is the most live heap, in bytes, a watcher may gain per
	// change (PODSYNC_SOAK_MAX_SLOPE).
	maxSlope float64
	// profiles, when set, is a folder where each watcher's heap profile
	// is saved at the start and at the end of the measured part
	// (PODSYNC_SOAK_PROFILES), to compare with `go tool pprof -base`.
	profiles string
}

func readSettings(t *testing.T) settings {
	t.Helper()
	s := settings{duration: 90 * time.Second, warmUp: 40 * time.Second, pods: 100, steps: 15, restartEvery: 30 * time.Second, maxSlope: 40}
	if v := os.Getenv("PODSYNC_SOAK_DURATION"); v != "" {
		s.duration = parse(t, v, time.ParseDuration)
	}
	if v := os.Getenv("PODSYNC_SOAK_WARMUP"); v != "" {
		s.warmUp = parse(t, v, time.ParseDuration)
	}
	if v := os.Getenv("PODSYNC_SOAK_PODS"); v != "" {
		s.pods = parse(t, v, strconv.Atoi)
	}
	if v := os.Getenv("PODSYNC_SOAK_STEPS"); v != "" {
		s.steps = parse(t, v, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) })
	}
	if v := os.Getenv("PODSYNC_SOAK_RESTART_EVERY"); v != "" {
		s.restartEvery = parse(t, v, time.ParseDuration)
	}
	if v := os.Getenv("PODSYNC_SOAK_MAX_SLOPE"); v != "" {
		s.maxSlope = parse(t, v, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) })
	}
	s.profiles = os.Getenv("PODSYNC_SOAK_PROFILES")
	return s
}

func parse[T any](t *testing.T, v string, f func(string) (T, error)) T {
	t.Helper()
	x, err := f(v)
	if err != nil {
		t.Fatalf("soak setting %q: %v", v, err)
	}
	return x
}

// watcher is one podsync run under the soak, with its heap samples.
type watcher struct {
	name    string
	s       *harness.Stream
	addr    string
	samples []sample
}

// Three watchers, as a user leaves them running: every namespace as JSON,
// a table with a label column, and a check that is never met (it wants
// more pods than the churn holds) with the cluster's Events.
func startWatchers(t *testing.T, ns string) []*watcher {
	t.Helper()
	pprof := []string{"PODSYNC_PPROF=127.0.0.1:0"}
	runs := []struct {
		name string
		args []string
	}{
		{"json", []string{"-A", "-o", "json", "--watch-only"}},
		{"table", []string{"-n", ns, "-L", "step"}},
		{"check", []string{"-n", ns, "--until", "ready", "--min-pods", "100000", "--timeout", "24h", "--events", "--progress-interval", "0"}},
	}
	var ws []*watcher
	for _, r := range runs {
		w := &watcher{name: r.name, s: env.StartEnv(t, pprof, r.args...)}
		w.s.WaitStderr(profilingAt.String(), time.Minute)
		w.addr = profilingAt.FindStringSubmatch(w.s.Stderr())[1]
		ws = append(ws, w)
	}
	return ws
}

// The live heap of a podsync left running grows with the pods it holds,
// not with the changes it has seen: under steady churn (the pods held stay
// the same in number while new names and UIDs keep coming) and API server
// restarts, the slope of the heap after a collection over the number of
// changes stays under a few tens of bytes per change.
func TestHeapFollowsPodsNotChanges(t *testing.T) {
	set := readSettings(t)
	csB := churnServer(t)
	ns := env.Namespace(t)
	ch := &churn{cs: csB, ns: ns, pods: set.pods, steps: set.steps}
	if err := ch.fill(t.Context()); err != nil {
		t.Fatal(err)
	}
	ws := startWatchers(t, ns)
	for _, w := range ws {
		w.s.WaitLine(`churn-`, 2*time.Minute)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	started := time.Now()
	var background sync.WaitGroup
	background.Go(func() { ch.run(ctx) })
	r := &restarter{every: set.restartEvery}
	background.Go(func() { r.run(ctx, t) })
	warm := time.Now().Add(set.warmUp)
	measuring := false
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for !enough(t, ws, started, set.duration) {
		<-tick.C
		segment, steady := r.segment()
		if time.Now().Before(warm) || !steady {
			continue
		}
		if !measuring {
			measuring = true
			saveProfiles(t, ws, set.profiles, "start")
		}
		sampleAll(t, ws, segment, ch.made.Load())
	}
	cancel()
	background.Wait()
	saveProfiles(t, ws, set.profiles, "end")
	t.Logf("churn: %d writes made, %d failed, %d pods held, %d API server restarts over %s", ch.made.Load(), ch.failed.Load(), set.pods, r.restarts, time.Since(started).Round(time.Second))
	for _, w := range ws {
		judge(t, w, set.maxSlope)
	}
	for _, w := range ws {
		r := w.s.Stop(syscall.SIGTERM)
		if w.name == "check" && r.Code != 143 || w.name != "check" && r.Code != 0 && r.Code != 143 {
			t.Errorf("%s watcher ended with %d:\n%s", w.name, r.Code, r.Stderr)
		}
	}
}

// minChanges is the fewest changes a soak measures: on a loaded machine
// restarts take longer and leave less time between them, so the churn goes
// on past the duration until this many were measured (at most three times
// the duration).
const minChanges = 1500

// enough says whether the soak has run long enough.
func enough(t *testing.T, ws []*watcher, started time.Time, duration time.Duration) bool {
	t.Helper()
	took := time.Since(started)
	if took < duration {
		return false
	}
	var measured int64
	if s := ws[0].samples; len(s) > 1 {
		measured = s[len(s)-1].changes - s[0].changes
	}
	if measured >= minChanges {
		return true
	}
	if took > 3*duration {
		t.Errorf("only %d changes measured in %s", measured, took.Round(time.Second))
		return true
	}
	return false
}

// sampleAll samples each watcher's live heap: the least of three readings
// a moment apart, as what is in flight at one collection (a watch event
// being decoded, a line being written) is not what the run holds.
func sampleAll(t *testing.T, ws []*watcher, segment int, changes int64) {
	t.Helper()
	for _, w := range ws {
		var least uint64
		for i := range 3 {
			heap, err := heapAfterGC(context.Background(), w.addr)
			if err != nil {
				t.Fatalf("%s watcher: %v\n%s", w.name, err, w.s.Stderr())
			}
			if i == 0 || heap < least {
				least = heap
			}
			time.Sleep(100 * time.Millisecond)
		}
		w.samples = append(w.samples, sample{segment: segment, changes: changes, heap: least})
	}
}

func saveProfiles(t *testing.T, ws []*watcher, dir, when string) {
	t.Helper()
	if dir == "" {
		return
	}
	for _, w := range ws {
		if err := saveProfile(context.Background(), w.addr, dir, w.name+"-"+when+".pprof"); err != nil {
			t.Errorf("%s watcher: %v", w.name, err)
		}
	}
}

// noise is how much the live heap after a collection moves by itself
// over the measured part (what is in flight when the heap is read, on a
// loaded machine, and what is kept for a while rather than per pod: Events
// held a minute for a pod not shown yet): a growth under it is not told
// from none. A short soak measures some two thousand changes (at least
// minChanges), so it catches a growth of a few hundred bytes per change; a
// long one, of maxSlope.
const noise = 768 << 10

// judge fails w when its heap grew with the changes: more than maxSlope
// bytes per change, and more than the noise over the changes measured.
func judge(t *testing.T, w *watcher, maxSlope float64) {
	t.Helper()
	if len(w.samples) < 5 {
		t.Fatalf("%s watcher: only %d heap samples", w.name, len(w.samples))
	}
	first, last := w.samples[0], w.samples[len(w.samples)-1]
	changes := last.changes - first.changes
	b := slope(w.samples)
	limit := max(maxSlope, noise/float64(changes))
	t.Logf("%s watcher: live heap %.2f MB → %.2f MB over %d changes (%d samples): slope %.1f bytes per change (limit %.0f); samples (changes:bytes):%s",
		w.name, mb(first.heap), mb(last.heap), changes, len(w.samples), b, limit, series(w.samples))
	if b > limit {
		t.Errorf("%s watcher: its live heap grows with the changes it sees: %.1f bytes per change, over the limit of %.0f", w.name, b, limit)
	}
}

func series(samples []sample) string {
	var b strings.Builder
	for _, s := range samples {
		fmt.Fprintf(&b, " %d:%d", s.changes, s.heap)
	}
	return b.String()
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }

// churnServer starts a second API server on the cluster's etcd for the
// churn's writes, so that changes go on while the one podsync watches
// through is down.
func churnServer(t *testing.T) kubernetes.Interface {
	t.Helper()
	kubeconfig, err := env.Cluster.StartAPIServer(t.Context(), "kube-apiserver-churn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Cluster.Kill("kube-apiserver-churn") })
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// restarter kills the API server podsync watches through every period,
// and brings it back after a few seconds. Its segments number the spells
// between restarts: a restart moves the heap by a step (new connections,
// a relist), which is not growth with the changes, so the slope is taken
// within segments (see slope).
type restarter struct {
	every    time.Duration
	mu       sync.Mutex
	restarts int
	// down: the API server is down or has been back for less than settle.
	down   bool
	backAt time.Time
}

// settle is how long after a restart the heap is not sampled: the
// relist and reconnection are in flight.
const settle = 5 * time.Second

func (r *restarter) run(ctx context.Context, t *testing.T) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(r.every):
		}
		r.mu.Lock()
		r.down = true
		r.mu.Unlock()
		if err := env.Cluster.Kill(localcluster.APIServer); err != nil {
			t.Errorf("kill the API server: %v", err)
			return
		}
		time.Sleep(3 * time.Second)
		if err := env.Cluster.Restart(localcluster.APIServer); err != nil {
			t.Errorf("restart the API server: %v", err)
			return
		}
		r.mu.Lock()
		r.down, r.backAt = false, time.Now()
		r.restarts++
		r.mu.Unlock()
	}
}

// segment is the number of the spell between restarts, and whether the
// heap can be sampled now.
func (r *restarter) segment() (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.restarts, !r.down && time.Since(r.backAt) >= settle
}
