// Command kubectl-podsync is the `kubectl podsync` plugin.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	// Exec, OIDC and the other client-go auth plugins.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	// Before the packages of k8s.io/kubectl: see its comment.
	"github.com/kubectl-podsync/kubectl-podsync/internal/children"
	_ "github.com/kubectl-podsync/kubectl-podsync/internal/english"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/cmd"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
)

func main() {
	os.Exit(run())
}

func run() int {
	// A credential plugin that does not answer is left running by
	// client-go: podsync ends it, and what it started, when it ends.
	children.Adopt()
	defer children.Kill()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
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
		children.Kill()
		os.Exit(podsync.SignalExitCode(sig))
	}()
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	return cmd.Execute(ctx, streams, os.Args[1:])
}
