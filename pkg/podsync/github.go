package podsync

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-podsync/kubectl-podsync/internal/ghactions"
	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/output"
)

// errOut is the run's stderr: under GitHub Actions every line goes through
// ghactions.Defuse, so no text from the cluster in a warning, a progress line
// or the summary can run a workflow command; podsync's own commands are
// written with lockedWriter.writeRaw.
func errOut(cfg Config) io.Writer {
	if cfg.GitHub == nil {
		return cfg.ErrOut
	}
	if _, ok := cfg.ErrOut.(*ghactions.DefusedWriter); ok {
		return cfg.ErrOut
	}
	return &ghactions.DefusedWriter{Raw: cfg.ErrOut}
}

// writeSummary writes the text summary on stderr; under GitHub Actions
// as output.WriteSummaryForGitHub writes it, past the defusing stderr,
// and appended to the job summary as Markdown.
func (s *stream) writeSummary(sum check.Summary) {
	gh := s.cfg.GitHub
	if gh == nil {
		_ = output.WriteSummaryText(s.stderr, sum)
		return
	}
	var report strings.Builder
	_ = output.WriteSummaryForGitHub(&report, sum, gh.Token)
	s.stderr.writeRaw(report.String())
	if gh.StepSummary == "" {
		return
	}
	if err := output.AppendJobSummary(gh.StepSummary, sum); err != nil {
		fmt.Fprintf(s.stderr, "warning: GitHub job summary: %s\n", text.OneLine(err.Error(), 0))
	}
}

// writeJSONSummary writes the JSON summary on stderr; under GitHub Actions
// defused as JSON (ghactions.DefuseJSON), which decodes to the same values.
func (s *stream) writeJSONSummary(sum check.Summary) {
	if s.cfg.GitHub == nil {
		_ = output.WriteSummaryJSON(s.stderr, sum)
		return
	}
	var b bytes.Buffer
	_ = output.WriteSummaryJSON(&b, sum)
	s.stderr.writeRaw(string(ghactions.DefuseJSON(b.Bytes())))
}
