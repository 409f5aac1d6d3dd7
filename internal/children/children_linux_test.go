//go:build linux

package children

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// helperEnv names the scenario the test binary runs as a helper process:
// no child can be started after Kill, so each Kill runs in a process of
// its own.
const helperEnv = "PODSYNC_CHILDREN_HELPER"

// TestMain runs a helper's scenario instead of the tests when asked.
func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "one":
		killOne()
	case "meanwhile":
		startingWhileKilled()
	case "stderr":
		routedStderr()
	}
	os.Exit(0)
}

// helper runs the test binary as the helper of scenario and returns what
// it printed.
func helper(t *testing.T, scenario string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"="+scenario)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	return string(out)
}

// Kill ends a child, and sees none before one is started.
func TestKillEndsDescendants(t *testing.T) {
	if out := helper(t, "one"); out != "killed\n" {
		t.Fatal(out)
	}
}

func killOne() {
	Adopt()
	if hasChildren() {
		fmt.Println("a child before any was started")
		return
	}
	cmd := exec.Command("sh", "-c", "sleep 60 & wait")
	if err := cmd.Start(); err != nil {
		fmt.Println(err)
		return
	}
	if !hasChildren() {
		fmt.Println("no child seen while one runs")
		return
	}
	Kill()
	if err := cmd.Wait(); err == nil {
		fmt.Println("the child ended well: it was not killed")
		return
	}
	fmt.Println("killed")
}

// Kill leaves no child alive even while goroutines keep starting children
// as it runs: a child whose start began before the sweep is killed, and
// none starts after it.
func TestKillStopsChildrenStartedMeanwhile(t *testing.T) {
	for range 3 {
		if out := helper(t, "meanwhile"); !strings.Contains(out, "survivors: 0\n") {
			t.Fatalf("children outlived Kill:\n%s", out)
		}
	}
}

// startingWhileKilled starts children from several goroutines, runs Kill
// among them, and says how many descendants are alive a while after.
func startingWhileKilled() {
	Adopt()
	var stop atomic.Bool
	var started atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for !stop.Load() {
				cmd := exec.Command("sleep", "30")
				if cmd.Start() == nil {
					started.Add(1)
					go func() { _ = cmd.Wait() }()
				}
			}
		})
	}
	for started.Load() < 20 {
		time.Sleep(time.Millisecond)
	}
	Kill()
	// What started meanwhile has started by now.
	time.Sleep(500 * time.Millisecond)
	fmt.Printf("started: %d\nsurvivors: %d\n", started.Load(), len(descendants()))
	// Without the fix the goroutines still run: stop them and end what
	// they started, so that nothing outlives the test.
	stop.Store(true)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second): // blocked for ever, as they should be
	}
	for _, pid := range descendants() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// A child's stderr reaches the process's pipe, not the real stderr; a
// partial line is flushed once it has waited.
func TestRouteStderr(t *testing.T) {
	out := helper(t, "stderr")
	want := "real: own line\ncopied: \"::error::pwned\\nprompt: \"\nflushed: 1\n"
	if out != want {
		t.Errorf("helper printed\n%s\nwant\n%s", out, want)
	}
}

// routedStderr routes stderr, runs a child that writes on it, and prints
// what the real stderr (here, stdout) and the pipe got.
func routedStderr() {
	real, s := RouteStderr()
	if s == nil {
		fmt.Println("not routed")
		return
	}
	// The helper's stderr and stdout are one pipe: what reached the real
	// stderr shows among what it prints.
	fmt.Fprintln(real, "real: own line")
	var mu sync.Mutex
	var got strings.Builder
	flushes := 0
	w := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return got.Write(p)
	})
	go s.Copy(w, func() {
		mu.Lock()
		defer mu.Unlock()
		flushes++
	})
	cmd := exec.Command("sh", "-c", "echo '::error::pwned' >&2; printf 'prompt: ' >&2")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Println(err)
		return
	}
	time.Sleep(3 * flushAfter)
	s.Drain(time.Second, func() {})
	mu.Lock()
	defer mu.Unlock()
	fmt.Printf("copied: %q\nflushed: %d\n", got.String(), flushes)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
