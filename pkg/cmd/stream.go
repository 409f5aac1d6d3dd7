package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/controller"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/output"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source"
)

// SignalError is the cancel cause main gives the context when a signal
// arrives, so the run can end with 128+signal after its summary.
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
	}
	return sig.String()
}

// stream is the one goroutine that owns stdout: it prints each message and
// judges the check as keys are processed.
type stream struct {
	o        *Options
	ctrl     *controller.Controller
	writer   *output.Writer
	eval     *check.Evaluator
	events   map[string]int
	typed    kubernetes.Interface
	stderr   io.Writer
	rollouts *rollouts
	initial  bool // the initial list has been printed
}

// ending is why the loop stopped.
type ending struct {
	cause error // nil for a normal end
	code  int
	word  string
}

var errEnded = errors.New("run ended")

func newStream(o *Options, ctrl *controller.Controller, typed kubernetes.Interface, stderr io.Writer) *stream {
	s := &stream{
		o: o, ctrl: ctrl, writer: o.writer, typed: typed, stderr: stderr,
		eval:     check.NewEvaluator(o.spec),
		events:   map[string]int{},
		rollouts: newRollouts(typed.AppsV1(), o.maxRetries, stderr),
	}
	s.eval.ConfirmRollouts()
	return s
}

func (s *stream) loop(ctx context.Context, requests <-chan request) ending {
	s.writer.SetBuffered(true)
	initialDone := s.ctrl.InitialDone()
	for {
		select {
		case <-ctx.Done():
			return s.fromCause(context.Cause(ctx))
		case <-initialDone:
			initialDone, s.initial = nil, true
			if s.o.once {
				// --once judges the initial list: later changes are not read.
				requests = nil
			}
			s.writer.SetBuffered(false)
			if err := s.writer.Flush(); err != nil {
				return s.writeEnding(err)
			}
			if end, ok := s.judge(ctx); ok {
				return end
			}
		case res := <-s.rollouts.results:
			s.rollouts.apply(s.eval, res)
			if end, ok := s.judge(ctx); ok {
				return end
			}
		case r := <-requests:
			err := s.handle(r.msgs)
			r.done <- err
			var we *output.WriteError
			if errors.As(err, &we) {
				return s.writeEnding(err)
			}
			if end, ok := s.judge(ctx); ok {
				return end
			}
		}
	}
}

func (s *stream) handle(msgs []controller.Message) error {
	for _, m := range msgs {
		if err := s.writer.Write(m); err != nil {
			return err
		}
		s.events[m.Kind.String()]++
		if m.Kind == controller.Gone {
			s.eval.Forget(m.Key)
			continue
		}
		s.eval.ObserveStatus(m.Key, m.Row.Pod, source.Cell(m.Row, "Status"), m.Kind == controller.Sync)
	}
	return nil
}

// judge decides whether the run is over. A failure ends it at once, except
// with --once, which prints the whole initial list and judges that state;
// a met condition only counts once the whole initial list has been seen.
// When only Deployments not yet confirmed hold the check back, they are
// looked up; --once waits for those answers before it judges.
func (s *stream) judge(ctx context.Context) (ending, bool) {
	v := s.eval.Verdict()
	switch {
	case v.State == check.Failed && (!s.o.once || s.initial):
		return ending{code: check.ExitFailed, word: check.VerdictFailed}, true
	case !s.initial:
		return ending{}, false
	case v.State == check.Met:
		return ending{code: check.ExitOK, word: check.VerdictMet}, true
	case v.WaitsOnRollout():
		keys := s.eval.Unconfirmed()
		if !s.o.once || !s.answered(keys) {
			s.rollouts.ask(ctx, keys)
			return ending{}, false
		}
	}
	if s.o.once {
		return ending{code: v.ExitCode(), word: v.Word()}, true
	}
	return ending{}, false
}

// answered reports whether every one of the Deployments has been looked up.
func (s *stream) answered(deployments []string) bool {
	for _, k := range deployments {
		if !s.eval.HasCurrent(k) {
			return false
		}
	}
	return true
}

// fromCause turns the reason the context ended into an ending.
func (s *stream) fromCause(cause error) ending {
	var sig SignalError
	switch {
	case errors.As(cause, &sig):
		return ending{cause: cause, code: SignalExitCode(sig.Signal), word: check.VerdictInterrupted}
	case errors.Is(cause, errTimeout):
		v := s.eval.Verdict()
		return ending{code: v.ExitCode(), word: v.Word()}
	}
	return ending{cause: cause, code: ExitCode(cause)}
}

// ExitBrokenPipe is the exit code of a check whose stdout reader went away
// before the verdict: 128+SIGPIPE, what a shell reports for a command that
// a broken pipe killed.
const ExitBrokenPipe = 128 + int(syscall.SIGPIPE)

// writeEnding ends a run whose output cannot be written. A reader that went
// away (`| head -1`) ends it quietly: no error text, no summary. A plain
// stream has done its job, since the reader asked for no more: exit 0. A
// check (--until, --fail-on, --max-restarts) has no verdict yet, and 0
// would claim one: exit 141. Main asks for SIGPIPE so that such writes
// fail with EPIPE instead of killing the process.
func (s *stream) writeEnding(err error) ending {
	if errors.Is(err, syscall.EPIPE) {
		code := 0
		if checking(s.o.spec) {
			code = ExitBrokenPipe
		}
		return ending{cause: errSilent, code: code}
	}
	return ending{cause: fmt.Errorf("write output: %w", err), code: 1}
}

// checking reports whether the run judges pods, so its exit code is a
// verdict.
func checking(spec check.Spec) bool {
	return len(spec.Conditions) > 0 || len(spec.FailOn) > 0 || spec.MaxRestarts != check.Unset
}

// finish prints the summary and returns the run's error, if any.
func (s *stream) finish(ctx context.Context, end ending, took time.Duration) error {
	// The run's context has ended, so lookups still running stop now.
	s.rollouts.wg.Wait()
	if end.word == "" {
		if end.code == 0 {
			return nil
		}
		// The contract promises the reason on one line.
		return &exitError{code: end.code, err: lineError{end.cause}}
	}
	_ = s.writer.Flush()
	v := s.eval.Verdict()
	sum := check.Summary{
		Verdict: end.word, ExitCode: end.code, Duration: took,
		Pods: v.Pods, Statuses: s.eval.Statuses(), Events: s.events, Reason: s.eval.Reason(v),
	}
	if end.code == check.ExitNotMet || end.code == check.ExitFailed {
		sum.Unsatisfied, sum.Omitted = s.explain(ctx, v)
	}
	if end.cause != nil {
		sum.Reason = end.cause.Error()
	}
	_ = sum.WriteText(s.stderr)
	if s.o.writer.Shape() == output.Event && *s.o.printFlags.OutputFormat == "json" {
		_ = sum.WriteJSON(s.stderr)
	}
	if end.code == 0 {
		return nil
	}
	return &exitError{code: end.code, err: errSilent}
}

// errSilent marks an exit code whose explanation is already on stderr.
var errSilent = errors.New("")

// lineError shows an error folded onto one line.
type lineError struct{ err error }

func (e lineError) Error() string { return oneLine(e.err) }
func (e lineError) Unwrap() error { return e.err }

// lockedWriter lets workers report dropped keys while the stream writes.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// SignalExitCode is 128 plus the signal's number, as shells report it.
func SignalExitCode(sig os.Signal) int {
	if sig == syscall.SIGTERM {
		return check.ExitSIGTERM
	}
	return check.ExitSIGINT
}
