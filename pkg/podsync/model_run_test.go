package podsync_test

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

func TestMain(m *testing.M) {
	// The reflector logs every cut watch and relist; the model plays many.
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	// Besides logging it, apimachinery rate-limits every unhandled error
	// against one process-wide time of the last: read on the clock of
	// another bubble (each starts in 2000) or the real one, it is years
	// away, and a reflector that reports an error would sleep for them.
	utilruntime.ErrorHandlers = nil
	os.Exit(m.Run())
}

// modelHistories is how many histories TestModel plays: 2,000 by default
// (make test), 200 with -short; PODSYNC_MODEL_HISTORIES sets it, and
// PODSYNC_MODEL_SEED the first seed (default 1), to explore further.
func modelHistories(t *testing.T) (first uint64, n int) {
	first, n = 1, 2000
	if testing.Short() {
		n = 200
	}
	if v := os.Getenv("PODSYNC_MODEL_HISTORIES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("PODSYNC_MODEL_HISTORIES=%q: %v", v, err)
		}
	}
	if v := os.Getenv("PODSYNC_MODEL_SEED"); v != "" {
		var err error
		if first, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("PODSYNC_MODEL_SEED=%q: %v", v, err)
		}
	}
	return first, n
}

// TestModel plays random histories through real runs and holds each
// printed stream and verdict against the truth (checkRun). A failing seed
// is shrunk to a short history that still fails, and both are printed;
// PODSYNC_MODEL_SEED=N PODSYNC_MODEL_HISTORIES=1 replays one.
func TestModel(t *testing.T) {
	first, n := modelHistories(t)
	start := time.Now()
	var (
		mu       sync.Mutex
		failures []failure
		stats    modelStats
	)
	// The group returns once its parallel histories have all played.
	t.Run("histories", func(t *testing.T) {
		for seed := first; seed < first+uint64(n); seed++ {
			t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
				t.Parallel()
				h := generate(seed)
				began := time.Now()
				bad, code, err := playAndCheck(t, h)
				mu.Lock()
				defer mu.Unlock()
				stats.add(h, code, time.Since(began))
				if err != nil || len(bad) > 0 {
					failures = append(failures, failure{h: h, bad: bad, err: err})
				}
			})
		}
	})
	t.Logf("%d histories in %s: %s", n, time.Since(start).Round(time.Second), stats)
	if len(failures) == 0 {
		return
	}
	for _, f := range failures[:min(3, len(failures))] {
		t.Errorf("history failed:\n%s%s", f.h, f)
	}
	t.Errorf("%d of %d histories failed", len(failures), n)
	if os.Getenv("PODSYNC_MODEL_NO_SHRINK") != "" {
		return
	}
	t.Errorf("the first, shrunk:\n%s", shrink(t, failures[0].h))
}

// FuzzModel drives the same generator from the fuzzer's bytes, so that the
// fuzzer can grow the histories that reach new code.
func FuzzModel(f *testing.F) {
	for _, seed := range []string{"\x01", "podsync", strings.Repeat("\xff\x00\x7f", 40)} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h := generateFrom(rand.New(&byteSource{data: data}), 0)
		bad, _, err := playAndCheck(t, h)
		if err != nil || len(bad) > 0 {
			t.Fatalf("history failed:\n%s%s", h, failure{h: h, bad: bad, err: err})
		}
	})
}

// byteSource is a rand.Source that reads the fuzzer's bytes, then goes on
// with a generator seeded by them (a constant stream would make rejection
// sampling loop for ever).
type byteSource struct {
	data []byte
	at   int
	rest *rand.PCG
}

func (b *byteSource) Uint64() uint64 {
	if b.at+8 <= len(b.data) {
		b.at += 8
		return binary.LittleEndian.Uint64(b.data[b.at-8 : b.at])
	}
	if b.rest == nil {
		h := fnv.New64a()
		h.Write(b.data)
		b.rest = rand.NewPCG(h.Sum64(), uint64(len(b.data)))
	}
	return b.rest.Uint64()
}

type failure struct {
	h   *history
	bad []string
	err error
}

func (f failure) String() string {
	if f.err != nil {
		return "  error: " + f.err.Error() + "\n"
	}
	return "  " + strings.Join(f.bad, "\n  ") + "\n"
}

// playAndCheck plays h in a bubble of its own, so that its pauses and the
// run's timers go by on the bubble's clock, and what the stream shows is
// judged once every goroutine of the run waits rather than after a guess
// at how long that takes. The bubble also requires that the run leaves no
// goroutine behind once it has ended.
func playAndCheck(t *testing.T, h *history) (bad []string, code int, err error) {
	synctest.Test(t, func(*testing.T) {
		var res *result
		if res, err = play(h); err != nil {
			return
		}
		code = res.outcome.ExitCode()
		if bad = checkRun(res); len(bad) > 0 {
			bad = append(bad, fmt.Sprintf("exit %d (%v); stdout:\n%sstderr:\n%s", code, res.outcome.Err, res.stdout, res.stderr))
		}
	})
	return bad, code, err
}

// shrink removes steps, initial pods and workers from a failing history
// while it still fails (a timing-dependent failure gets three tries per
// candidate), for at most two minutes.
func shrink(t *testing.T, h *history) string {
	deadline := time.Now().Add(2 * time.Minute)
	fails := func(c *history) bool {
		for range 3 {
			if bad, _, err := playAndCheck(t, c); err != nil || len(bad) > 0 {
				return true
			}
		}
		return false
	}
	cur := *h
	for i := len(cur.ops) - 1; i >= 0 && time.Now().Before(deadline); i-- {
		c := cur
		c.ops = append(append([]op{}, cur.ops[:i]...), cur.ops[i+1:]...)
		if fails(&c) {
			cur = c
		}
	}
	for k := range cur.initial {
		if time.Now().After(deadline) {
			break
		}
		c := cur
		c.initial = map[int]podState{}
		for kk, st := range cur.initial {
			if kk != k {
				c.initial[kk] = st
			}
		}
		if fails(&c) {
			cur = c
		}
	}
	if c := cur; c.workers > 1 && time.Now().Before(deadline) {
		c.workers = 1
		if fails(&c) {
			cur = c
		}
	}
	return cur.String()
}

// modelStats sums up what the histories covered.
type modelStats struct {
	histories, ops, longest, relists, cuts, recreates   int
	revisions, disconnects, targets, contexts, lostEnds int
	once, maxRestarts                                   int
	slowest                                             time.Duration
	slowestSeed                                         uint64
	formats                                             map[string]int
	// exits counts the exit codes of the checks, by kind of history.
	exits map[string]map[int]int
}

func (s *modelStats) add(h *history, code int, took time.Duration) {
	if s.formats == nil {
		s.formats, s.exits = map[string]int{}, map[string]map[int]int{}
	}
	s.histories++
	s.ops += len(h.ops)
	s.longest = max(s.longest, len(h.ops))
	if took > s.slowest {
		s.slowest, s.slowestSeed = took, h.seed
	}
	s.formats[h.format]++
	kind := "pods"
	switch {
	case h.once:
		s.once++
		kind = "once"
	case h.targets:
		s.targets++
		kind = "targets"
	case h.contexts > 1:
		s.contexts++
		kind = "contexts"
	}
	if h.lostAtEnd >= 0 {
		s.lostEnds++
	}
	if h.check && h.maxRestarts != check.Unset {
		s.maxRestarts++
	}
	if h.check {
		if s.exits[kind] == nil {
			s.exits[kind] = map[int]int{}
		}
		s.exits[kind][code]++
	}
	for _, o := range h.ops {
		switch o.step {
		case opCompact:
			s.relists++
		case opCut:
			s.cuts++
		case opRecreate:
			s.recreates++
		case opRevision:
			s.revisions++
		case opRollBack:
			s.revisions += 2
		case opDisconnect:
			s.disconnects++
		}
	}
}

func (s modelStats) String() string {
	return fmt.Sprintf("%d steps (longest history %d steps, slowest %s: seed %d), %d relists, %d cut watches, %d recreations; "+
		"%d about targets (%d rollouts and rollbacks), %d over several contexts (%d disconnections, %d lost at the end), %d --once, %d with --max-restarts; "+
		"exit codes of checks %v; formats %v",
		s.ops, s.longest, s.slowest.Round(time.Millisecond), s.slowestSeed, s.relists, s.cuts, s.recreates,
		s.targets, s.revisions, s.contexts, s.disconnects, s.lostEnds, s.once, s.maxRestarts, s.exits, s.formats)
}
