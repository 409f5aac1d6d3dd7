package output

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-podsync/kubectl-podsync/internal/ghactions"
	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// WriteSummaryForGitHub writes the text summary as a run writes it on
// stderr under GitHub Actions: defused and, as a second guard, between
// stop-commands lines of token (it holds log lines and messages from the
// cluster), then one ::error annotation per pod it explains, per failed
// target and per context that could not be used.
func WriteSummaryForGitHub(w io.Writer, s check.Summary, token string) error {
	report := ghactions.StopCommands(token, ghactions.Defuse(summaryText(s)))
	if _, err := io.WriteString(w, report); err != nil {
		return fmt.Errorf("writing summary: %w", err)
	}
	return WriteSummaryAnnotations(w, s)
}

// AppendJobSummary appends the summary as Markdown to the job summary
// file at path ($GITHUB_STEP_SUMMARY), in the room the file has left.
func AppendJobSummary(path string, s check.Summary) error {
	return ghactions.AppendStepSummary(path, func(w io.Writer, room int) error {
		return WriteSummaryMarkdown(w, s, room)
	})
}

// maxAnnotationLines bounds the log lines of one ::error annotation.
const maxAnnotationLines = 10

// WriteSummaryAnnotations writes one GitHub Actions ::error workflow command per
// explained pod: the title names the pod and its reason, the body is the
// reason's message and the first lines of the failed container's log
// tail. Titles and bodies are escaped as GitHub documents it for
// properties and data, so no text from the cluster can end the command or
// start another one.
func WriteSummaryAnnotations(w io.Writer, s check.Summary) error {
	var b strings.Builder
	for i := range s.Unsatisfied {
		p := &s.Unsatisfied[i]
		b.WriteString(ghactions.Error(text.Escape(annotationTitle(p)), text.Escape(annotationBody(p))))
	}
	// A target whose own rule failed (a custom resource's Failed status,
	// a Job's BackoffLimitExceeded) may have no pod to blame.
	for _, t := range s.Targets {
		if t.Verdict == check.TargetFailed {
			b.WriteString(ghactions.Error(targetLabel(t)+": failed", targetReason(t)))
		}
	}
	// A context that could not be used fails the check with no pod to
	// blame: it gets its own annotation.
	for _, c := range s.Contexts {
		if c.Verdict == "failed" && strings.HasPrefix(c.Reason, "unavailable: ") {
			b.WriteString(ghactions.Error(text.Escape("context "+c.Name+": unavailable"), text.Escape(c.Reason)))
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing annotations: %w", err)
	}
	return nil
}

// annotationTitle is "pod NS/NAME: REASON", the reason being the first
// container's waiting or terminated reason, else the pod's own, else the
// first unmet condition.
func annotationTitle(p *check.PodExplanation) string {
	title := "pod " + p.QualifiedName()
	if r := titleReason(p); r != "" {
		title += ": " + r
	}
	return title
}

func titleReason(p *check.PodExplanation) string {
	for i := range p.Containers {
		if failedContainer(&p.Containers[i]) {
			return p.Containers[i].Reason
		}
	}
	switch {
	case p.Reason != "":
		return p.Reason
	case len(p.UnmetConditions) > 0:
		u := p.UnmetConditions[0]
		return "not " + u.Condition + ": " + u.Got
	}
	return "phase " + p.Phase
}

// annotationBody is each container that failed, with its log tail.
func annotationBody(p *check.PodExplanation) string {
	var lines []string
	for i := range p.Containers {
		c := &p.Containers[i]
		if c.Logs == nil && !failedContainer(c) {
			continue
		}
		lines = append(lines, fmt.Sprintf("container %s: %s%s", c.Name, c.State, reasonText(c.Reason, c.Message)))
		if c.Logs != nil {
			tail := c.Logs.Lines
			if len(tail) > maxAnnotationLines {
				tail = tail[len(tail)-maxAnnotationLines:]
			}
			lines = append(lines, tail...)
			if c.Logs.Error != "" {
				lines = append(lines, "log not available: "+c.Logs.Error)
			}
		}
	}
	if len(lines) == 0 {
		lines = append(lines, "phase "+p.Phase)
	}
	return strings.Join(lines, "\n")
}

// failedContainer: the container waits or ended for a reason other than
// success.
func failedContainer(c *check.ContainerExplanation) bool {
	return c.Reason != "" && c.State != "running" && c.Reason != "Completed"
}
