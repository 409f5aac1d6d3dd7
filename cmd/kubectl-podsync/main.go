// Command kubectl-podsync is the `kubectl podsync` plugin.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	// Exec, OIDC and the other client-go auth plugins.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	"k8s.io/klog/v2"

	// Before the packages of k8s.io/kubectl: see its comment.
	"github.com/kubectl-podsync/kubectl-podsync/internal/children"
	_ "github.com/kubectl-podsync/kubectl-podsync/internal/english"
	"github.com/kubectl-podsync/kubectl-podsync/internal/ghactions"
	"github.com/kubectl-podsync/kubectl-podsync/internal/profiling"
	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/cmd"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
)

func main() {
	var p process
	p.exit(p.run())
}

// process holds what children (exec credential plugins) write on stderr,
// on its way to the real stderr; both nil when it goes there directly.
type process struct {
	stderr *children.Stderr
	guard  *text.LineGuard
}

func (p *process) run() int {
	// A credential plugin that does not answer is left running by
	// client-go: podsync ends it, and what it started, when it ends.
	children.Adopt()
	defer func() {
		// A crash, too, leaves no plugin running; exit does it otherwise.
		if r := recover(); r != nil {
			children.Kill()
			panic(r)
		}
	}()
	// client-go gives a credential plugin the process's own stderr: its
	// text goes through the guard (escaped, bounded, no workflow command
	// under GitHub Actions), and a plugin left running holds only the
	// process's pipe, never the caller's stderr.
	errOut, stderr := children.RouteStderr()
	if stderr != nil {
		p.stderr = stderr
		p.guard = &text.LineGuard{Out: errOut, GitHub: ghactions.Active(os.Getenv), What: "a credential plugin"}
		go stderr.Copy(p.guard, p.guard.Flush)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	signals := make(chan os.Signal, 1)
	// SIGHUP: the terminal or the session that ran podsync went away.
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	// Asking for SIGPIPE turns a write to a closed stdout (`| head -1`) into
	// an EPIPE error, which the command ends on quietly; otherwise the
	// runtime would kill the process. Notify, unlike Ignore, is not
	// inherited by exec credential plugins.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	go func() {
		sig := <-signals
		cancel(podsync.SignalError{Signal: sig})
		// A second signal means "stop now", without the summary.
		<-signals
		p.exit(podsync.SignalExitCode(sig))
	}()
	// PODSYNC_PPROF, PODSYNC_HEAP_PROFILE: nothing runs without them.
	defer profiling.Start(os.Getenv, errOut)()
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: errOut}
	return cmd.Execute(ctx, streams, os.Args[1:])
}

// endWait bounds what the process does once the run has returned (its
// summary and stdout written): a CI step waits for the process, and for
// stderr to close, so nothing may hold either after the verdict.
const endWait = 500 * time.Millisecond

// exit ends the process with code within endWait: it kills the children
// that would outlive it and hold its stdout or stderr open (a credential
// plugin that does not answer) and writes out what they wrote, but waits
// for nothing the run left behind (goroutines, connections, a fork that
// does not return).
func (p *process) exit(code int) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		children.Kill()
		if p.stderr != nil {
			p.stderr.Drain(endWait/2, p.guard.Flush)
		}
		// Only -v logs through klog, unbuffered; a flush costs nothing.
		klog.Flush()
	}()
	select {
	case <-done:
	case <-time.After(endWait):
	}
	os.Exit(code)
}
