//go:build unix

package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// component is one control-plane process: what to run and, once it runs,
// which process (group) belongs to it. The exported fields are persisted in
// the state file so that another process can stop or restart it.
type component struct {
	Name   string   `json:"name"`
	Binary string   `json:"binary"`
	Args   []string `json:"args"`
	Env    []string `json:"env,omitempty"`
	Log    string   `json:"log"`
	// Health is polled until it answers 200; empty means "running is enough".
	Health string `json:"health,omitempty"`
	PID    int    `json:"pid,omitempty"`
	// Started is the kernel's start time of PID. A PID can be reused after the
	// process exits; a different start time means it is not ours any more.
	Started uint64 `json:"started,omitempty"`

	// done is closed when the process started by this Go process exits; nil
	// for a process found through Attach.
	done    chan struct{}
	waitErr error
}

// start runs the component in its own session (so its process group is ours
// to signal and a terminal's hangup does not reach it). Unless detach is set
// the kernel kills it when this process dies, so an aborted test run does
// not leave an etcd behind.
func (p *component) start(dir string, detach bool) error {
	logf, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log of %s: %w", p.Name, err)
	}
	defer logf.Close() // the child keeps its own descriptor
	fmt.Fprintf(logf, "=== %s: %s %s\n", time.Now().Format(time.RFC3339), p.Binary, strings.Join(p.Args, " "))

	cmd := exec.Command(p.Binary, p.Args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr(detach)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	p.PID = cmd.Process.Pid
	p.Started = processStartTime(p.PID)
	done := make(chan struct{})
	p.done = done
	go func() {
		p.waitErr = cmd.Wait()
		close(done)
	}()
	return nil
}

// exited reports whether a process started by this Go process has ended, and
// how.
func (p *component) exited() (bool, error) {
	if p.done == nil {
		return false, nil
	}
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// running reports whether the recorded process is still the one we started.
func (p *component) running() bool {
	if p.PID == 0 {
		return false
	}
	if p.done != nil {
		gone, _ := p.exited()
		return !gone
	}
	return isProcess(p.PID, p.Started)
}

// stop sends sig to the component's process group, and SIGKILL if it is
// still there after grace. It signals only a process it can prove is ours.
func (p *component) stop(sig syscall.Signal, grace time.Duration) error {
	defer func() { p.PID, p.Started = 0, 0 }()
	if !p.running() {
		return nil
	}
	// Setsid made the process the leader of a group with its own PID.
	if err := syscall.Kill(-p.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %s (pid %d): %w", p.Name, p.PID, err)
	}
	if p.waitGone(grace) {
		return nil
	}
	if p.running() {
		_ = syscall.Kill(-p.PID, syscall.SIGKILL)
	}
	if !p.waitGone(10 * time.Second) {
		return fmt.Errorf("%s (pid %d) is still running after SIGKILL", p.Name, p.PID)
	}
	return nil
}

func (p *component) waitGone(d time.Duration) bool {
	if p.done != nil {
		select {
		case <-p.done:
			return true
		case <-time.After(d):
			return false
		}
	}
	deadline := time.Now().Add(d)
	for p.running() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// logTail returns the last n lines of the component's log, for error messages.
func (p *component) logTail(n int) string {
	f, err := os.Open(p.Log)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	const window = 16 << 10
	if st, err := f.Stat(); err == nil && st.Size() > window {
		_, _ = f.Seek(-window, io.SeekEnd)
	}
	data, _ := io.ReadAll(f)
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// failure describes a component problem with the end of its log, which is
// nearly always where the reason is.
func (p *component) failure(what error) error {
	return fmt.Errorf("%s: %w\n--- last lines of %s ---\n%s", p.Name, what, p.Log, p.logTail(15))
}
