package podsync

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/output"
)

// errOut is the run's stderr: under GitHub Actions every line goes through
// text.Defuse, so no text from the cluster in a warning, a progress line
// or the summary can run a workflow command; podsync's own commands are
// written with lockedWriter.writeRaw.
func errOut(cfg Config) io.Writer {
	if cfg.GitHub == nil {
		return cfg.ErrOut
	}
	if _, ok := cfg.ErrOut.(*text.DefusedWriter); ok {
		return cfg.ErrOut
	}
	return &text.DefusedWriter{Raw: cfg.ErrOut}
}

// writeSummary writes the text summary on stderr; under GitHub Actions it
// is defused and, as a second guard, between stop-commands lines (it holds
// log lines and messages from the cluster), followed by one ::error
// annotation per pod it explains, and appended to the job summary as
// Markdown.
func (s *stream) writeSummary(sum check.Summary) {
	gh := s.cfg.GitHub
	if gh == nil {
		_ = output.WriteSummaryText(s.stderr, sum)
		return
	}
	var report, annotations strings.Builder
	_ = output.WriteSummaryText(&report, sum)
	s.stderr.writeRaw(output.StopCommands(gh.Token, text.Defuse(report.String())))
	_ = output.WriteSummaryAnnotations(&annotations, sum)
	s.stderr.writeRaw(annotations.String())
	if gh.StepSummary == "" {
		return
	}
	if err := appendMarkdown(gh.StepSummary, sum); err != nil {
		fmt.Fprintf(s.stderr, "warning: GitHub job summary: %s\n", text.OneLine(err.Error(), 0))
	}
}

// writeJSONSummary writes the JSON summary on stderr; under GitHub Actions
// defused as JSON (text.DefuseJSON), which decodes to the same values.
func (s *stream) writeJSONSummary(sum check.Summary) {
	if s.cfg.GitHub == nil {
		_ = output.WriteSummaryJSON(s.stderr, sum)
		return
	}
	var b bytes.Buffer
	_ = output.WriteSummaryJSON(&b, sum)
	s.stderr.writeRaw(string(text.DefuseJSON(b.Bytes())))
}

// appendMarkdown appends the summary to the job summary file.
func appendMarkdown(path string, sum check.Summary) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close %s: %w", path, cerr)
		}
	}()
	return output.WriteSummaryMarkdown(f, sum, markdownRoom(f))
}

// markdownRoom is what is left of the job summary's 1 MiB: earlier steps'
// text in the same file counts too.
func markdownRoom(f *os.File) int {
	st, err := f.Stat()
	if err != nil {
		return output.MaxMarkdown
	}
	return max(0, output.MaxMarkdown-int(st.Size()))
}
