package faults

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// SIGHUP, SIGINT and SIGTERM during a stream end it with the summary on
// stderr, then exit 129, 130 or 143; the same for a check that has no
// verdict yet.
func TestSignalsEndWithSummary(t *testing.T) {
	tc := sharedCluster(t)
	ns := tc.Namespace(t)
	createPod(t, tc.cs, ns, newPod("web", true, nil))
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM} {
		code := 128 + int(sig)
		for name, args := range map[string][]string{"stream": nil, "check": {"--until", "ready"}} {
			t.Run(fmt.Sprintf("%s %s", name, sig), func(t *testing.T) {
				s := tc.Start(t, append([]string{"-n", ns}, args...)...)
				s.WaitLine(`^SYNC\s+web\s`, 2*time.Minute)
				r := s.Stop(sig)
				if r.Code != code {
					t.Errorf("exit code %d, want %d\n%s", r.Code, code, r)
				}
				want := fmt.Sprintf("Verdict:  interrupted (exit %d) after ", code)
				if !strings.HasPrefix(r.Stderr, want) || !strings.Contains(r.Stderr, "Events:   SYNC 1, ADD 0, UPDATE 0, GONE 0\n") {
					t.Errorf("stderr should be the summary, starting %q\n%s", want, r)
				}
				if strings.Contains(r.Stderr, "goroutine ") || strings.Contains(r.Stderr, "panic") {
					t.Errorf("stack trace on stderr\n%s", r)
				}
			})
		}
	}
}

// The reader of stdout goes away (`kubectl podsync | head -n 1`) while no
// pod changes. A plain stream notices without writing, as `tail -f | head`
// does, and ends within a second of head, quietly, with 0, without waiting
// for the next change. A check keeps judging without its stdout and ends
// with its verdict: 0 when met, 3 at its timeout (not 141 at its next
// write).
func TestStdoutClosedEarly(t *testing.T) {
	tc := sharedCluster(t)
	ns := tc.Namespace(t)
	createPod(t, tc.cs, ns, newPod("held", true, nil))
	createPod(t, tc.cs, ns, newPod("web", false, map[string]string{"app": "web"}))
	harness.WaitReady(t, tc.cs, ns, "web")
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"stream", []string{"-n", ns}, 0},
		{"check met", []string{"-n", ns, "-l", "app=web", "--until", "ready"}, 0},
		{"check not met", []string{"-n", ns, "--until", "ready", "--timeout", "4s"}, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := pipeToHead(t, tc, c.args)
			if p.code != c.code {
				t.Errorf("exit code %d, want %d (stderr %q)", p.code, c.code, p.stderr)
			}
			if !strings.HasPrefix(p.stdout, "EVENT ") || strings.Count(p.stdout, "\n") != 1 {
				t.Errorf("head printed %q, want the header line", p.stdout)
			}
			if c.code == 3 {
				if !strings.HasPrefix(p.stderr, "Verdict:  not met (exit 3)") {
					t.Errorf("stderr %q, want the summary of the check", p.stderr)
				}
				return
			}
			if c.code == 0 && c.name == "stream" {
				if p.stderr != "" {
					t.Errorf("stderr %q, want nothing", p.stderr)
				}
				t.Logf("podsync ended %s after head", p.after.Round(time.Millisecond))
				if p.after > time.Second {
					t.Errorf("podsync ended %s after head, want within a second", p.after)
				}
			}
		})
	}
}

// piped is one run of `kubectl podsync ARGS | head -n 1`.
type piped struct {
	code           int
	stdout, stderr string
	// after is how long podsync ran on once head had exited.
	after time.Duration
}

// pipeToHead runs `kubectl podsync ARGS | head -n 1` in bash; no pod
// changes meanwhile. It returns podsync's exit code, what head printed,
// podsync's stderr, and how long podsync outlived head (both record the
// time they end, in nanoseconds).
func pipeToHead(t *testing.T, tc *testCluster, args []string) piped {
	t.Helper()
	dir := t.TempDir()
	file := func(name string) string { return filepath.Join(dir, name) }
	script := `{ "$1" podsync "${@:2}" 2>"` + file("stderr") + `"; echo "$?" >"` + file("code") + `"; date +%s%N >"` + file("podsync-end") + `"; } ` +
		`| { head -n 1; date +%s%N >"` + file("head-end") + `"; }`
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{"-c", script, "bash", tc.KubectlBin}, args...)...)
	// The race detector's runtime sleeps a second before a process exits,
	// to let late reports out; that second is not podsync's.
	cmd.Env = tc.Command(ctx, []string{"GORACE=atexit_sleep_ms=0"}).Env
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("bash: %v (podsync still running after two minutes?)", err)
	}
	end, headEnd := readNumber(t, file("podsync-end")), readNumber(t, file("head-end"))
	return piped{code: readNumber(t, file("code")), stdout: out.String(), stderr: readFile(t, file("stderr")),
		after: time.Duration(end - headEnd)}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func readNumber(t *testing.T, path string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(readFile(t, path), &n); err != nil {
		t.Fatalf("%s: %v", filepath.Base(path), err)
	}
	return n
}
