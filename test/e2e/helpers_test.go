package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// result is one finished `kubectl podsync` run.
type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit %d after %s\n--- stdout\n%s--- stderr\n%s", r.code, r.took.Round(time.Millisecond), r.stdout, r.stderr)
}

// command builds `kubectl podsync ARGS` (or another kubectl command) with
// the test environment: KUBECONFIG of the local cluster, PATH with the
// plugin first.
func command(ctx context.Context, extraEnv []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, env.kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.kubeconfig, "PATH="+env.path, "NO_COLOR=1")
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
	return cmd
}

// podsync runs `kubectl podsync ARGS` to the end (at most limit).
func podsync(t *testing.T, limit time.Duration, args ...string) result {
	t.Helper()
	return podsyncEnv(t, limit, nil, args...)
}

func podsyncEnv(t *testing.T, limit time.Duration, extraEnv []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := command(ctx, extraEnv, append([]string{"podsync"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{code: exitCode(err), stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("kubectl podsync %s did not end within %s\n%s", strings.Join(args, " "), limit, r)
	}
	return r
}

func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

// kubectl runs the pinned kubectl and fails the test on error.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := kubectlErr(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func kubectlErr(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := command(ctx, nil, args...).CombinedOutput()
	return string(out), err
}

// apply pipes YAML to kubectl apply in namespace ns.
func apply(t *testing.T, ns, yaml string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := command(ctx, nil, "apply", "-n", ns, "-f", "-")
	cmd.Stdin = strings.NewReader(yaml)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s\n%s", err, out, yaml)
	}
}

var nsCounter struct {
	sync.Mutex
	n int
}

// namespace creates a fresh namespace for one test and deletes it after.
func namespace(t *testing.T) string {
	t.Helper()
	nsCounter.Lock()
	nsCounter.n++
	name := fmt.Sprintf("e2e-%d-%s", nsCounter.n, strings.ToLower(regexp.MustCompile(`[^a-zA-Z0-9]+`).ReplaceAllString(t.Name(), "-")))
	nsCounter.Unlock()
	if len(name) > 60 {
		name = strings.TrimRight(name[:60], "-")
	}
	kubectl(t, "create", "namespace", name)
	t.Cleanup(func() { _, _ = kubectlErr("delete", "namespace", name, "--wait=false") })
	return name
}

// eventually polls cond until it holds or limit passes.
func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s", limit, what)
}

// stream is a running `kubectl podsync` whose stdout lines are read as they
// come, as a pipe would see them.
type stream struct {
	t      *testing.T
	cmd    *exec.Cmd
	cancel context.CancelFunc
	mu     sync.Mutex
	lines  []string
	stderr bytes.Buffer
	done   chan struct{}
	res    result
	start  time.Time
}

// startPodsync starts `kubectl podsync ARGS` in the background; the test's
// cleanup kills it if the test did not stop it.
func startPodsync(t *testing.T, args ...string) *stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	s := &stream{t: t, cancel: cancel, done: make(chan struct{})}
	s.cmd = command(ctx, nil, append([]string{"podsync"}, args...)...)
	s.cmd.Stderr = &lockedBuffer{mu: &s.mu, b: &s.stderr}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.start = time.Now()
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			s.mu.Lock()
			s.lines = append(s.lines, sc.Text())
			s.mu.Unlock()
		}
		err := s.cmd.Wait()
		s.mu.Lock()
		s.res = result{code: exitCode(err), stdout: strings.Join(s.lines, "\n") + "\n", stderr: s.stderr.String(), took: time.Since(s.start)}
		s.mu.Unlock()
		close(s.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-s.done
	})
	return s
}

// Lines returns the stdout lines read so far.
func (s *stream) Lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

// Stderr returns what was written to stderr so far.
func (s *stream) Stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// waitLine waits for a stdout line matching re and returns it.
func (s *stream) waitLine(re string, limit time.Duration) string {
	s.t.Helper()
	rx := regexp.MustCompile(re)
	var found string
	eventually(s.t, limit, fmt.Sprintf("a line matching %q; stdout so far:\n%s\nstderr:\n%s", re, strings.Join(s.Lines(), "\n"), s.Stderr()), func() bool {
		for _, l := range s.Lines() {
			if rx.MatchString(l) {
				found = l
				return true
			}
		}
		return false
	})
	return found
}

// stop sends sig and waits for the process to end.
func (s *stream) stop(sig syscall.Signal) result {
	s.t.Helper()
	_ = s.cmd.Process.Signal(sig)
	return s.wait(time.Minute)
}

// wait waits for the process to end by itself.
func (s *stream) wait(limit time.Duration) result {
	s.t.Helper()
	select {
	case <-s.done:
	case <-time.After(limit):
		s.t.Fatalf("kubectl podsync still running after %s; stdout:\n%s\nstderr:\n%s", limit, strings.Join(s.Lines(), "\n"), s.Stderr())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.res
}

type lockedBuffer struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
