package faults

import (
	"bytes"
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// The contract's "within a second" is measured as at most 3 s in these
// tests: the machine that runs them is shared and loaded, and a process
// built with the race detector ends slower. Bounds on --timeout count from
// the clock start podsync logs at -v=1 (harness.ClockStart), bounds on a
// signal from the signal: never from the process start, which a loaded
// machine delays by seconds.
const endWithin = 3 * time.Second

// silentListener accepts HTTP connections and never answers; each accepted
// connection is sent on accepted when there is room. It returns host:port.
func silentListener(t *testing.T, accepted chan<- struct{}) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
			select {
			case accepted <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// bigHeldPods creates n pods that never become ready, each with a large
// annotation, so that a few JSON messages fill a 64 KiB pipe.
func bigHeldPods(t *testing.T, tc *testCluster, ns string, n int) {
	t.Helper()
	for i := range n {
		p := newPod("big-"+string(rune('a'+i)), true, nil)
		p.Annotations = map[string]string{"podsync.test/filler": strings.Repeat("x", 70_000)}
		createPod(t, tc.cs, ns, p)
	}
}

// A check whose stdout nobody reads (a full pipe) stops printing and goes
// on judging: --timeout ends it with exit 3 and the summary.
func TestFullPipeCheckTimesOut(t *testing.T) {
	tc := sharedCluster(t)
	ns := tc.Namespace(t)
	bigHeldPods(t, tc, ns, 4)
	begin := time.Now()
	s, release := tc.StartHeld(t, "-n", ns, "-o", "json", "--until", "ready", "--timeout", "8s", "-v=1")
	s.WaitWriteBlocked(time.Minute)
	waitEnded(t, s.PID(), 8*time.Second+30*time.Second)
	ended := time.Now()
	release()
	r := s.Wait(30 * time.Second)
	if r.Code != 3 {
		t.Fatalf("exit %d, want 3\n%s", r.Code, r)
	}
	if !strings.Contains(r.Stderr, "Verdict:  not met (exit 3) after 8s") {
		t.Errorf("stderr lacks the summary\n%s", r)
	}
	took := ended.Sub(harness.ClockStart(t, r.Stderr))
	t.Logf("ended %s after its clock started, %s after kubectl started", took.Round(time.Millisecond), ended.Sub(begin).Round(time.Millisecond))
	if took > 8*time.Second+endWithin {
		t.Errorf("ended %s after its clock started, want within %s of the 8s timeout", took, endWithin)
	}
}

// A plain stream whose stdout nobody reads waits for its reader, but the
// first SIGTERM ends it with 143 and the summary.
func TestFullPipeStreamSignal(t *testing.T) {
	tc := sharedCluster(t)
	ns := tc.Namespace(t)
	bigHeldPods(t, tc, ns, 4)
	s, release := tc.StartHeld(t, "-n", ns, "-o", "json")
	s.WaitWriteBlocked(time.Minute)
	time.Sleep(time.Second) // the stream is now blocked on its reader
	start := time.Now()
	s.Signal(syscall.SIGTERM)
	waitEnded(t, s.PID(), 30*time.Second)
	took := time.Since(start)
	release()
	r := s.Wait(30 * time.Second)
	if r.Code != 143 {
		t.Fatalf("exit %d, want 143\n%s", r.Code, r)
	}
	if !strings.HasPrefix(r.Stderr, "Verdict:  interrupted (exit 143) after ") {
		t.Errorf("stderr should be the summary\n%s", r)
	}
	if took > endWithin {
		t.Errorf("ended %s after SIGTERM, want within %s", took, endWithin)
	}
}

// A -f URL that never answers: --timeout ends the run with the summary
// (exit 3 with --until, 0 without), and SIGINT with 130.
func TestManifestURLNeverAnswers(t *testing.T) {
	tc := sharedCluster(t)
	ns := tc.Namespace(t)
	accepted := make(chan struct{}, 16)
	url := "http://" + silentListener(t, accepted) + "/app.yaml"
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"until", []string{"--until", "ready", "--timeout", "3s"}, 3, "Verdict:  not met (exit 3) after 3s\nReason:   --timeout 3s passed while reading the manifests (-f " + url + ")"},
		{"stream", []string{"--timeout", "3s"}, 0, "Verdict:  done (exit 0) after 3s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := tc.Podsync(t, time.Minute, append([]string{"-n", ns, "-f", url, "-v=1"}, c.args...)...)
			if r.Code != c.code || !strings.Contains(r.Stderr, c.want) {
				t.Fatalf("exit %d, want %d with %q\n%s", r.Code, c.code, c.want, r)
			}
			took := harness.SinceClock(t, r)
			t.Logf("ended %s after its clock started, %s after kubectl started", took.Round(time.Millisecond), r.Took.Round(time.Millisecond))
			if took > 3*time.Second+endWithin {
				t.Errorf("ended %s after its clock started, want within %s of the 3s timeout", took, endWithin)
			}
		})
	}
	t.Run("SIGINT", func(t *testing.T) {
		for len(accepted) > 0 {
			<-accepted
		}
		s := tc.Start(t, "-n", ns, "-f", url, "--until", "ready")
		select {
		case <-accepted: // podsync is reading the URL
		case <-time.After(time.Minute):
			t.Fatalf("podsync never asked for %s", url)
		}
		start := time.Now()
		s.Signal(syscall.SIGINT)
		r := s.Wait(30 * time.Second)
		if r.Code != 130 || !strings.Contains(r.Stderr, "Verdict:  interrupted (exit 130)") {
			t.Fatalf("exit %d, want 130 with the summary\n%s", r.Code, r)
		}
		if took := time.Since(start); took > endWithin {
			t.Errorf("ended %s after SIGINT, want within %s", took, endWithin)
		}
	})
}

// -f input is bounded: more than 64 MiB in all (here an endless stdin) is
// refused with one line and exit 2, without reading on: podsync takes at
// most the limit from its stdin and its memory stays bounded (the test
// ends it if it grows past inputRSSLimit).
func TestManifestInputBounded(t *testing.T) {
	tc := sharedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := tc.Command(ctx, nil, "podsync", "-f", "-", "--until", "ready")
	in := &endless{}
	cmd.Stdin = in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var peak atomic.Int64
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			rss := vmRSS(cmd.Process.Pid)
			if rss > peak.Load() {
				peak.Store(rss)
			}
			if rss > inputRSSLimit {
				_ = cmd.Process.Kill()
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	<-watched
	if p := peak.Load(); p > inputRSSLimit {
		t.Fatalf("podsync grew to %d MiB reading an endless -f -, over %d MiB; ended by the test", p>>20, inputRSSLimit>>20)
	}
	if code := harness.ExitCode(err); code != 2 {
		t.Fatalf("exit %d, want 2\n%s", code, stderr.String())
	}
	want := "error: read the manifest on stdin: the input of -f is larger than 64 MiB in all, the most podsync reads\n"
	if stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	// What stdin gave beyond the limit is at most what the pipe and the
	// copy into it hold.
	if n := in.n.Load(); n > 65<<20 {
		t.Errorf("podsync took %d MiB from stdin, over the 64 MiB limit", n>>20)
	}
	t.Logf("stdin gave %d MiB; peak resident memory %d MiB", in.n.Load()>>20, peak.Load()>>20)
}

// inputRSSLimit bounds podsync's resident memory while it reads -f: the
// binary under test is built with the race detector, which multiplies
// what a 64 MiB read takes (under 1 GiB measured).
const inputRSSLimit = 2 << 30

// vmRSS is the resident memory of process pid in bytes, 0 if unknown.
func vmRSS(pid int) int64 {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// endless is a manifest that never ends: one ConfigMap's data, for ever.
// n counts the bytes it gave.
type endless struct{ n atomic.Int64 }

func (e *endless) Read(p []byte) (int, error) {
	at := int(e.n.Load())
	for i := range p {
		p[i] = "  k: v\n"[(at+i)%7]
	}
	e.n.Add(int64(len(p)))
	return len(p), nil
}

// waitEnded waits until the process has ended (it is a zombie, or gone):
// a stream whose stdout is held cannot be waited for, since the harness
// reads its stdout to the end first.
func waitEnded(t *testing.T, pid int, limit time.Duration) {
	t.Helper()
	harness.Eventually(t, limit, harness.Text("kubectl podsync to end"), func() bool {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		return len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X")
	})
}
