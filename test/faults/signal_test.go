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
)

// SIGINT and SIGTERM during a stream end it with the summary on stderr,
// then exit 130 or 143; the same for a check that has no verdict yet.
func TestSignalsEndWithSummary(t *testing.T) {
	tc := sharedCluster(t)
	ns := tc.Namespace(t)
	createPod(t, tc.cs, ns, newPod("web", true, nil))
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
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

// The reader of stdout goes away (`kubectl podsync | head -n 1`): podsync
// ends at its next write, quietly (no error text, no stack trace). A plain
// stream exits 0, since the reader asked for no more; a check without a
// verdict exits 141, as a command killed by SIGPIPE would.
func TestStdoutClosedEarly(t *testing.T) {
	tc := sharedCluster(t)
	ns := tc.Namespace(t)
	createPod(t, tc.cs, ns, newPod("web", true, nil))
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"stream", []string{"-n", ns}, 0},
		{"check", []string{"-n", ns, "--until", "ready"}, 141},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := pipeToHead(t, tc, ns, fmt.Sprintf("pipe%d", i), c.args)
			if code != c.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, c.code, stderr)
			}
			if stderr != "" {
				t.Errorf("stderr %q, want nothing", stderr)
			}
			if !strings.HasPrefix(stdout, "EVENT ") || strings.Count(stdout, "\n") != 1 {
				t.Errorf("head printed %q, want the header line", stdout)
			}
		})
	}
}

// pipeToHead runs `kubectl podsync ARGS | head -n 1` in bash and creates
// pods until podsync has written again and ended; it returns podsync's exit
// code (from PIPESTATUS), what head printed and podsync's stderr.
func pipeToHead(t *testing.T, tc *testCluster, ns, prefix string, args []string) (int, string, string) {
	t.Helper()
	dir := t.TempDir()
	errFile, codeFile := filepath.Join(dir, "stderr"), filepath.Join(dir, "code")
	script := `"$1" podsync "${@:2}" 2>"` + errFile + `" | head -n 1; echo "${PIPESTATUS[0]}" >"` + codeFile + `"`
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{"-c", script, "bash", tc.KubectlBin}, args...)...)
	cmd.Env = tc.Command(ctx, nil).Env
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for i := 0; ; i++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("bash: %v", err)
			}
			return readCode(t, codeFile), out.String(), readFile(t, errFile)
		case <-time.After(2 * time.Second):
		}
		if i > 60 {
			t.Fatalf("kubectl podsync | head -n 1 still runs after %d new pods", i)
		}
		// Each new pod is an ADD message: a write to the closed pipe.
		createPod(t, tc.cs, ns, newPod(fmt.Sprintf("%s-%d", prefix, i), true, nil))
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func readCode(t *testing.T, path string) int {
	t.Helper()
	var code int
	if _, err := fmt.Sscan(readFile(t, path), &code); err != nil {
		t.Fatalf("exit code file: %v", err)
	}
	return code
}
