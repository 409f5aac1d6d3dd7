package podsync

import (
	"fmt"
	"os"
	"strings"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// writeSummary writes the text summary on stderr; under GitHub Actions it
// is between stop-commands lines (it holds log lines and messages from the
// cluster), followed by one ::error annotation per pod it explains, and
// appended to the job summary as Markdown.
func (s *stream) writeSummary(sum check.Summary) {
	gh := s.cfg.GitHub
	if gh == nil {
		_ = sum.WriteText(s.stderr)
		return
	}
	var text strings.Builder
	_ = sum.WriteText(&text)
	_, _ = fmt.Fprint(s.stderr, check.StopCommands(gh.Token, text.String()))
	_ = sum.WriteAnnotations(s.stderr)
	if gh.StepSummary == "" {
		return
	}
	if err := appendMarkdown(gh.StepSummary, sum); err != nil {
		fmt.Fprintf(s.stderr, "warning: GitHub job summary: %s\n", check.OneLine(err.Error(), 0))
	}
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
	return sum.WriteMarkdown(f)
}
