package harness

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Stream is a running `kubectl podsync` whose stdout lines are read as they
// come, as a pipe would see them.
type Stream struct {
	t      testing.TB
	cmd    *exec.Cmd
	mu     sync.Mutex
	lines  []string
	times  []time.Time
	stderr bytes.Buffer
	done   chan struct{}
	// pipe is the read end of stdout (see WaitWriteBlocked).
	pipe  io.Reader
	res   Result
	start time.Time
	// ended is when the process had ended and closed its stdout and
	// stderr (what a CI step waits for).
	ended time.Time
	// written holds, for each write to stderr, where it ended and when.
	written []written
}

// written is one write to stderr: the length of stderr after it, and when.
type written struct {
	end int
	at  time.Time
}

// Start starts `kubectl podsync ARGS` in the background; the test's cleanup
// kills it if the test did not stop it.
func (e *Env) Start(t testing.TB, args ...string) *Stream {
	t.Helper()
	return e.StartEnv(t, nil, args...)
}

// StartEnv is Start with extra environment variables.
func (e *Env) StartEnv(t testing.TB, extraEnv []string, args ...string) *Stream {
	t.Helper()
	return e.start(t, extraEnv, nil, args)
}

// start starts the command; with hold, its stdout is not read until hold
// is closed (see StartHeld).
func (e *Env) start(t testing.TB, extraEnv []string, hold <-chan struct{}, args []string) *Stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	s := &Stream{t: t, done: make(chan struct{})}
	s.cmd = e.Command(ctx, extraEnv, append([]string{"podsync"}, args...)...)
	s.cmd.Stderr = &lockedBuffer{mu: &s.mu, b: &s.stderr, written: &s.written}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s.pipe = out
	s.start = time.Now()
	if err := s.cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		if hold != nil {
			<-hold
		}
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			s.mu.Lock()
			s.lines = append(s.lines, sc.Text())
			s.times = append(s.times, time.Now())
			s.mu.Unlock()
		}
		err := s.cmd.Wait()
		ended := time.Now()
		s.mu.Lock()
		s.ended = ended
		s.res = Result{Code: ExitCode(err), Stdout: joinLines(s.lines), Stderr: s.stderr.String(), Took: ended.Sub(s.start), Ended: ended}
		s.mu.Unlock()
		close(s.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-s.done
	})
	return s
}

func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// PID is the process ID of kubectl, which runs the plugin as its child
// (kubectl execs the plugin, so it is the same process).
func (s *Stream) PID() int { return s.cmd.Process.Pid }

// Lines returns the stdout lines read so far.
func (s *Stream) Lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

// LineTimes returns when each stdout line was read.
func (s *Stream) LineTimes() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.times...)
}

// Stderr returns what was written to stderr so far.
func (s *Stream) Stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// Dump is the stream's output so far, for failure messages.
func (s *Stream) Dump() string {
	return fmt.Sprintf("stdout so far:\n%s\nstderr so far:\n%s", strings.Join(s.Lines(), "\n"), s.Stderr())
}

// WaitLine waits for a stdout line matching re and returns the first one.
func (s *Stream) WaitLine(re string, limit time.Duration) string {
	s.t.Helper()
	return s.WaitLines(re, 1, limit)[0]
}

// WaitLines waits until n stdout lines match re and returns them all.
func (s *Stream) WaitLines(re string, n int, limit time.Duration) []string {
	s.t.Helper()
	rx := regexp.MustCompile(re)
	var found []string
	what := func() string { return fmt.Sprintf("%d lines matching %q; %s", n, re, s.Dump()) }
	Eventually(s.t, limit, what, func() bool {
		found = found[:0]
		for _, l := range s.Lines() {
			if rx.MatchString(l) {
				found = append(found, l)
			}
		}
		return len(found) >= n || s.exited()
	})
	if len(found) < n {
		s.t.Fatalf("kubectl podsync ended before %s", what())
	}
	return found
}

// WaitStderr waits until stderr matches re.
func (s *Stream) WaitStderr(re string, limit time.Duration) {
	s.t.Helper()
	rx := regexp.MustCompile(re)
	Eventually(s.t, limit, func() string { return fmt.Sprintf("stderr matching %q; %s", re, s.Dump()) },
		func() bool { return rx.MatchString(s.Stderr()) })
}

// Exited reports whether the command has ended.
func (s *Stream) Exited() bool { return s.exited() }

// Count is how many stdout lines read so far match re.
func (s *Stream) Count(re string) int {
	rx := regexp.MustCompile(re)
	n := 0
	for _, l := range s.Lines() {
		if rx.MatchString(l) {
			n++
		}
	}
	return n
}

func (s *Stream) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the running command.
func (s *Stream) Signal(sig syscall.Signal) {
	_ = s.cmd.Process.Signal(sig)
}

// Stop sends sig and waits for the process to end.
func (s *Stream) Stop(sig syscall.Signal) Result {
	s.t.Helper()
	s.Signal(sig)
	return s.Wait(time.Minute)
}

// Wait waits for the process to end by itself.
func (s *Stream) Wait(limit time.Duration) Result {
	s.t.Helper()
	select {
	case <-s.done:
	case <-time.After(limit):
		s.t.Fatalf("kubectl podsync still running after %s; %s", limit, s.Dump())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.res
}

// EndedAfterStderr is how long after the write to stderr holding the
// first match of re the process ended, stdout and stderr closed; the test
// fails unless it has ended and stderr matches.
func (s *Stream) EndedAfterStderr(re string) time.Duration {
	s.t.Helper()
	if !s.exited() {
		s.t.Fatalf("kubectl podsync is still running; %s", s.Dump())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	loc := regexp.MustCompile(re).FindStringIndex(s.stderr.String())
	if loc == nil {
		s.t.Fatalf("stderr does not match %q\n%s", re, s.stderr.String())
	}
	for _, w := range s.written {
		if w.end >= loc[1] {
			return s.ended.Sub(w.at)
		}
	}
	s.t.Fatalf("no write to stderr holds %q", re)
	return 0
}

type lockedBuffer struct {
	mu *sync.Mutex
	b  *bytes.Buffer
	// written, unless nil, gets each write's end and time.
	written *[]written
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.b.Write(p)
	if l.written != nil {
		*l.written = append(*l.written, written{end: l.b.Len(), at: time.Now()})
	}
	return n, err
}
