package podsync

import (
	"errors"
	"os"
	"syscall"
)

// Exit codes of kubectl podsync, as the contract promises them: scripts
// branch on these numbers, so they never change. This is their one home.
const (
	// ExitOK: the stream ended as asked, or --until was met.
	ExitOK = 0
	// ExitCluster: the cluster could not be used (unreachable,
	// unauthorized, forbidden) or an internal error happened.
	ExitCluster = 1
	// ExitUsage: a bad flag, selector, duration, condition or template,
	// reported before any cluster call.
	ExitUsage = 2
	// ExitNotMet: --until was not met within --timeout or on the --once state.
	ExitNotMet = 3
	// ExitFailed: a matching pod showed a --fail-on reason or exceeded
	// --max-restarts.
	ExitFailed = 4
	// ExitSIGHUP, ExitSIGINT and ExitSIGTERM: interrupted (128+signal),
	// after the summary.
	ExitSIGHUP  = 128 + int(syscall.SIGHUP)
	ExitSIGINT  = 128 + int(syscall.SIGINT)
	ExitSIGTERM = 128 + int(syscall.SIGTERM)
)

// Verdict is how a run ended.
type Verdict int

// The verdicts, in the order verdicts holds them.
const (
	// Done: the stream ended as asked (--once, --timeout without --until,
	// a reader of stdout that went away).
	Done Verdict = iota
	// Met: --until was met.
	Met
	// NotMet: --until was not met at --timeout or on the --once state.
	NotMet
	// Failed: a --fail-on reason or --max-restarts.
	Failed
	// Interrupted: SIGHUP, SIGINT or SIGTERM.
	Interrupted
	// Broken: the cluster could not be used, or an internal error.
	Broken
)

// verdicts is the one table of verdicts: the word of the summary and the
// exit code (Interrupted's depends on the signal).
var verdicts = [...]struct {
	word string
	code int
}{
	Done:        {"done", ExitOK},
	Met:         {"met", ExitOK},
	NotMet:      {"not met", ExitNotMet},
	Failed:      {"failed", ExitFailed},
	Interrupted: {"interrupted", ExitSIGINT},
	Broken:      {"error", ExitCluster},
}

func (v Verdict) String() string { return verdicts[v].word }

// Outcome is what a run returns.
type Outcome struct {
	Verdict Verdict
	// Signal ended an Interrupted run.
	Signal os.Signal
	// Err says why a Broken run could not go on, in one line.
	Err error
}

// ExitCode is the process exit code for the outcome.
func (o Outcome) ExitCode() int {
	switch {
	case o.Verdict == Interrupted:
		return SignalExitCode(o.Signal)
	case o.Verdict == Broken && errors.As(o.Err, new(UsageError)):
		return ExitUsage
	}
	return verdicts[o.Verdict].code
}

// UsageError is an error the user's input caused (exit 2): a flag,
// selector, duration, condition or template that cannot be used. Most are
// found before any cluster call; a --sort-by field that no pod has is
// found once the pods are listed.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// SignalExitCode is 128 plus the signal's number, as shells report it.
func SignalExitCode(sig os.Signal) int {
	switch sig {
	case syscall.SIGTERM:
		return ExitSIGTERM
	case syscall.SIGHUP:
		return ExitSIGHUP
	}
	return ExitSIGINT
}

// SignalError is the cancel cause the caller gives the run's context when a
// signal arrives, so that the run ends Interrupted, after its summary.
type SignalError struct{ Signal os.Signal }

func (e SignalError) Error() string { return "interrupted by " + signalName(e.Signal) }

// signalName is the name a shell user knows (SIGTERM), where Go's String
// gives a description ("terminated").
func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return sig.String()
}

// ErrTimeout is the cancel cause of a run that reached --timeout; a caller
// may end a run with it too, and the run ends as --timeout would end it.
var ErrTimeout = errors.New("timeout reached")
