package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/kubectl-podsync/kubectl-podsync/internal/ghactions"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/output"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
)

// What happens before the run proper (reading -f manifests, which may be
// URLs; mapping TYPE/NAME with discovery, which may run a credential
// plugin) is bounded as the run is: --timeout and a signal end it with a
// summary and the documented exit code, whatever it waits on. The work
// that does not answer is left behind; the process ends without it.

// preparation is the state of the work before the run proper, shared by
// the goroutine doing it and the one watching the clock and the signals.
type preparation struct {
	mu sync.Mutex
	// doing says what is being done, for the summary of a run ended while
	// it does.
	doing string
	// over: the run proper has started (it answers --timeout and signals
	// itself), or the preparation was abandoned.
	over      bool
	abandoned bool
}

func (p *preparation) set(doing string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.doing = doing
}

// swap says what is being done now and returns what was before.
func (p *preparation) swap(doing string) string {
	if p == nil {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	before := p.doing
	p.doing = doing
	return before
}

// start hands the run over to the run proper; false: it was abandoned.
func (p *preparation) start() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.abandoned {
		return false
	}
	p.over = true
	return true
}

// abandon takes the run from the preparation; false: the run proper has
// started already.
func (p *preparation) abandon() (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.over {
		return "", false
	}
	p.abandoned = true
	return p.doing, true
}

// runBounded completes, validates and runs the command, ending within the
// --timeout (which counts from here) and at a signal whatever it waits on.
func (o *Options) runBounded(ctx context.Context, c *cobra.Command, args []string) error {
	start := time.Now()
	o.quietKlog(c)
	// With its timestamp, this line lets a caller time the end against the
	// clock that --timeout counts on rather than the process start, which
	// a loaded machine can delay by seconds.
	klog.V(1).InfoS("The command's clock starts", "timeout", o.timeout)
	o.prep = &preparation{doing: "reading the kubeconfig"}
	done := make(chan error, 1)
	go func() { done <- o.completeAndRun(ctx, c, args, start) }()
	var deadline <-chan time.Time
	// The flags are parsed: --timeout is known, if valid.
	if o.timeout > 0 {
		t := time.NewTimer(o.timeout)
		defer t.Stop()
		deadline = t.C
	}
	var cause error
	select {
	case err := <-done:
		return err
	case <-deadline:
		cause = podsync.ErrTimeout
	case <-ctx.Done():
		cause = context.Cause(ctx)
	}
	doing, ok := o.prep.abandon()
	if !ok {
		return <-done // the run proper ends by itself
	}
	return o.endUnprepared(cause, doing, time.Since(start))
}

// completeAndRun is the command's work, in order.
func (o *Options) completeAndRun(ctx context.Context, c *cobra.Command, args []string, start time.Time) error {
	if o.showRules {
		return o.showHealthRules()
	}
	if err := o.Complete(c, args); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	return o.run(ctx, start)
}

// endUnprepared ends a run that --timeout or a signal stopped before it
// could watch: a summary that says what it was waiting on, and the code of
// the verdict (3 for an --until not met, 0 without one, 128+signal).
func (o *Options) endUnprepared(cause error, doing string, took time.Duration) error {
	out := podsync.Outcome{Verdict: podsync.Done}
	var sig podsync.SignalError
	reason := fmt.Sprintf("--timeout %s passed while %s", o.timeout, doing)
	switch {
	case errors.As(cause, &sig):
		out = podsync.Outcome{Verdict: podsync.Interrupted, Signal: sig.Signal}
		reason = fmt.Sprintf("%s while %s", sig.Error(), doing)
	case !errors.Is(cause, podsync.ErrTimeout):
		return cause
	case o.untilSet && o.until != "":
		out.Verdict = podsync.NotMet
	}
	sum := check.Summary{
		Verdict: out.Verdict.String(), ExitCode: out.ExitCode(), Duration: took, Reason: reason,
		Statuses: map[string]int{}, Events: map[string]int{},
		EventTypes: []string{"SYNC", "ADD", "UPDATE", "GONE"},
	}
	_ = output.WriteSummaryText(o.ErrOut, sum)
	if o.printFlags != nil && o.printFlags.OutputFormat != nil && *o.printFlags.OutputFormat == "json" {
		writeJSONSummary(o.ErrOut, sum)
	}
	return outcomeError(out)
}

// writeJSONSummary writes the JSON summary on stderr. Under GitHub Actions
// stderr defuses text, which would make the JSON invalid: it is defused as
// JSON instead (ghactions.DefuseJSON), which decodes to the same values.
func writeJSONSummary(w io.Writer, sum check.Summary) {
	d, ok := w.(*ghactions.DefusedWriter)
	if !ok {
		_ = output.WriteSummaryJSON(w, sum)
		return
	}
	var b bytes.Buffer
	_ = output.WriteSummaryJSON(&b, sum)
	_, _ = d.Raw.Write(ghactions.DefuseJSON(b.Bytes()))
}
