package output

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

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
		fmt.Fprintf(&b, "::error title=%s::%s\n", escapeProperty(text.Escape(annotationTitle(p))), escapeData(text.Escape(annotationBody(p))))
	}
	// A target whose own rule failed (a custom resource's Failed status,
	// a Job's BackoffLimitExceeded) may have no pod to blame.
	for _, t := range s.Targets {
		if t.Verdict == check.TargetFailed {
			fmt.Fprintf(&b, "::error title=%s::%s\n", escapeProperty(targetLabel(t)+": failed"), escapeData(targetReason(t)))
		}
	}
	// A context that could not be used fails the check with no pod to
	// blame: it gets its own annotation.
	for _, c := range s.Contexts {
		if c.Verdict == "failed" && strings.HasPrefix(c.Reason, "unavailable: ") {
			fmt.Fprintf(&b, "::error title=%s::%s\n", escapeProperty(text.Escape("context "+c.Name+": unavailable")), escapeData(text.Escape(c.Reason)))
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

// escapeData escapes the message of a workflow command.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeProperty escapes a property value of a workflow command.
func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// StopCommands wraps text from the cluster for GitHub Actions: between
// ::stop-commands::TOKEN and ::TOKEN:: the runner runs no workflow
// command, so a log line such as ::add-mask:: or ::error:: is only text.
// The token must be random per run, so the text cannot end the pause.
func StopCommands(token, text string) string {
	if token == "" || text == "" {
		return text
	}
	return "::stop-commands::" + token + "\n" + text + "::" + token + "::\n"
}
