package check

import (
	"fmt"
	"io"
	"strings"
)

// WriteMarkdown writes the summary as Markdown for a GitHub Actions job
// summary ($GITHUB_STEP_SUMMARY): the verdict, the reason, the counts,
// then a table of the pods that are not satisfied and each failed
// container's log tail in a code block. Text from the cluster is escaped
// for Markdown in table cells, and fenced in code blocks no log line can
// close.
func (s Summary) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### kubectl podsync: %s (exit %d) after %s\n\n", s.Verdict, s.ExitCode, RoundDuration(s.Duration))
	if s.Reason != "" {
		fmt.Fprintf(&b, "%s\n\n", mdText(OneLine(s.Reason, maxTextLen)))
	}
	b.WriteString("| pods | by STATUS | messages |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| %d | %s | %s |\n\n", s.Pods, mdText(strings.Trim(statusList(s.Statuses), " ()")), mdText(eventList(s.Events, s.EventKinds)))
	if len(s.Unsatisfied) > 0 {
		b.WriteString("| pod | phase | containers | unmet | events |\n|---|---|---|---|---|\n")
		for i := range s.Unsatisfied {
			writeMarkdownRow(&b, &s.Unsatisfied[i])
		}
		b.WriteString("\n")
		if s.Omitted > 0 {
			fmt.Fprintf(&b, "… and %d more unsatisfied pods not shown\n\n", s.Omitted)
		}
	}
	for i := range s.Unsatisfied {
		writeMarkdownLogs(&b, &s.Unsatisfied[i])
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing the job summary: %w", err)
	}
	return nil
}

func writeMarkdownRow(b *strings.Builder, p *PodExplanation) {
	var containers, unmet, events []string
	for _, c := range p.Containers {
		text := c.Name + ": " + c.State
		if c.Reason != "" {
			text += " (" + c.Reason + ")"
		}
		text += fmt.Sprintf(", restarts %d", c.RestartCount)
		if c.LastTermination != nil {
			text += fmt.Sprintf(", last exit code %d", c.LastTermination.ExitCode)
		}
		containers = append(containers, mdText(text))
	}
	for _, u := range p.UnmetConditions {
		unmet = append(unmet, mdText(fmt.Sprintf("%s: want %s, got %s", u.Condition, u.Want, u.Got)))
	}
	for _, ev := range p.Events {
		events = append(events, mdText(fmt.Sprintf("%s %s x%d: %s", ev.Type, ev.Reason, ev.Count, OneLine(ev.Message, 120))))
	}
	fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", mdText(podName(p)), mdText(p.Phase),
		strings.Join(containers, "<br>"), strings.Join(unmet, "<br>"), strings.Join(events, "<br>"))
}

func writeMarkdownLogs(b *strings.Builder, p *PodExplanation) {
	for _, c := range p.Containers {
		if c.Logs == nil || len(c.Logs.Lines) == 0 {
			continue
		}
		fmt.Fprintf(b, "<details><summary>%s, container %s: last %d log lines (%s)</summary>\n\n",
			mdText(podName(p)), mdText(c.Name), len(c.Logs.Lines), logInstance(c.Logs))
		text := Escape(strings.Join(c.Logs.Lines, "\n"))
		fence := strings.Repeat("`", max(3, longestRun(text, '`')+1))
		fmt.Fprintf(b, "%stext\n%s\n%s\n\n</details>\n\n", fence, text, fence)
	}
}

// mdText makes one line of text safe in Markdown: HTML characters become
// entities and Markdown punctuation is backslash-escaped, so text from
// the cluster cannot add links, images, HTML or table cells.
func mdText(s string) string {
	var b strings.Builder
	for _, r := range Escape(OneLine(s, 0)) {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '\\', '`', '*', '_', '[', ']', '|', '~', '!', '#':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}
