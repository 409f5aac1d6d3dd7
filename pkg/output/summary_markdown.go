package output

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// noteRoom is kept for the line that says what was cut.
const noteRoom = 512

// WriteSummaryMarkdown writes the summary as Markdown for a GitHub Actions job
// summary ($GITHUB_STEP_SUMMARY), in at most limit bytes: the verdict, the
// reason, the counts, then a table of the pods that are not satisfied and
// each failed container's log tail in a code block. What does not fit is
// left out in that order from the end (a log tail loses its first lines
// first), and a last line says so. Text from the cluster is escaped for
// Markdown in table cells (no link, image, HTML or cell can come from it),
// and fenced in code blocks no log line can close.
func WriteSummaryMarkdown(w io.Writer, s check.Summary, limit int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### kubectl podsync: %s (exit %d) after %s\n\n", s.Verdict, s.ExitCode, check.RoundDuration(s.Duration))
	if s.Reason != "" {
		fmt.Fprintf(&b, "%s\n\n", mdText(text.OneLine(s.Reason, maxTextLen)))
	}
	if s.Stability != nil {
		fmt.Fprintf(&b, "Stability window (--stable-for): %s\n\n", mdText(text.OneLine(s.Stability.String(), maxTextLen)))
	}
	b.WriteString("| pods | by STATUS | messages |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| %d | %s | %s |\n\n", s.Pods, mdText(strings.Trim(statusList(s.Statuses), " ()")), mdText(eventList(s.Events, s.EventTypes)))
	if l := leftBehindText(s.LeftBehind); l != "" {
		fmt.Fprintf(&b, "Replaced: %s\n\n", mdText(l))
	}
	room := limit - noteRoom
	cut := writeMarkdownTargets(&b, s.Targets, room/2)
	cut += writeMarkdownPods(&b, s, room)
	for i := range s.Unsatisfied {
		cut += writeMarkdownLogs(&b, &s.Unsatisfied[i], room)
	}
	if cut > 0 {
		fmt.Fprintf(&b, "… %d %s cut: the job summary is at most 1 MiB; the summary on stderr has them\n", cut, text.Plural(cut, "part", "parts"))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing the job summary: %w", err)
	}
	return nil
}

// writeMarkdownTargets writes a table of the targets and their verdicts,
// the rows that fit in room (a manifest may hold thousands of objects);
// it returns how many did not.
func writeMarkdownTargets(b *strings.Builder, targets []check.TargetSummary, room int) int {
	if len(targets) == 0 {
		return 0
	}
	b.WriteString("| target | verdict | reason |\n|---|---|---|\n")
	for i, t := range targets {
		row := fmt.Sprintf("| %s | %s | %s |\n", mdText(targetLabel(t)), mdText(t.Verdict), mdText(targetReason(t)))
		if b.Len()+len(row) > room {
			b.WriteString("\n")
			return len(targets) - i
		}
		b.WriteString(row)
	}
	b.WriteString("\n")
	return 0
}

// writeMarkdownPods writes the table of unsatisfied pods, the rows that
// fit in room; it returns how many did not.
func writeMarkdownPods(b *strings.Builder, s check.Summary, room int) int {
	if len(s.Unsatisfied) == 0 {
		return 0
	}
	b.WriteString("| pod | phase | containers | unmet | events |\n|---|---|---|---|---|\n")
	cut := 0
	for i := range s.Unsatisfied {
		var row strings.Builder
		writeMarkdownRow(&row, &s.Unsatisfied[i])
		if b.Len()+row.Len() > room {
			cut++
			continue
		}
		b.WriteString(row.String())
	}
	b.WriteString("\n")
	if s.Omitted > 0 {
		fmt.Fprintf(b, "… and %d more unsatisfied pods not shown\n\n", s.Omitted)
	}
	return cut
}

func writeMarkdownRow(b *strings.Builder, p *check.PodExplanation) {
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
		events = append(events, mdText(fmt.Sprintf("%s %s x%d: %s", ev.Type, ev.Reason, ev.Count, text.OneLine(ev.Message, 120))))
	}
	fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", mdText(p.QualifiedName()), mdText(p.Phase),
		strings.Join(containers, "<br>"), strings.Join(unmet, "<br>"), strings.Join(events, "<br>"))
}

// writeMarkdownLogs writes each failed container's log tail that has
// lines, keeping its last lines when it does not fit in room whole; it
// returns how many tails were cut or left out.
func writeMarkdownLogs(b *strings.Builder, p *check.PodExplanation, room int) int {
	cut := 0
	for _, c := range p.Containers {
		if c.Logs == nil || len(c.Logs.Lines) == 0 {
			continue
		}
		lines := c.Logs.Lines
		for len(lines) > 0 {
			block := markdownLogBlock(p, c.Name, c.Logs, lines)
			if b.Len()+len(block) <= room {
				b.WriteString(block)
				break
			}
			// Halve what is dropped each time: a tail of 1,000 long lines
			// fits in a few tries.
			lines = lines[max(1, (len(lines)+1)/2):]
		}
		if len(lines) < len(c.Logs.Lines) {
			cut++
		}
	}
	return cut
}

func markdownLogBlock(p *check.PodExplanation, container string, l *check.LogTail, lines []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<details><summary>%s, container %s: last %d log lines (%s)</summary>\n\n",
		mdText(p.QualifiedName()), mdText(container), len(lines), logInstance(l))
	escaped := text.Escape(strings.Join(lines, "\n"))
	fence := strings.Repeat("`", max(3, longestRun(escaped, '`')+1))
	fmt.Fprintf(&b, "%stext\n%s\n%s\n\n</details>\n\n", fence, escaped, fence)
	return b.String()
}

// mdText makes one line of text safe in Markdown: HTML characters become
// entities, Markdown punctuation is backslash-escaped, and the :// of a URL
// and the dot of www. too (GitHub makes bare URLs links), and the @ of an
// e-mail address (GitHub makes it a mailto: link), so text from the
// cluster cannot add links, images, HTML or table cells.
func mdText(s string) string {
	var b strings.Builder
	s = strings.ReplaceAll(text.Escape(text.OneLine(s, 0)), `\`, `\\`)
	s = strings.NewReplacer("://", ":\\/\\/", "www.", "www\\.", "WWW.", "WWW\\.").Replace(s)
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '`', '*', '_', '[', ']', '(', ')', '|', '~', '!', '#', '@':
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
