package check

import (
	"fmt"
	"strings"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
)

// writeLogTail writes a container's log tail under its line, each line
// escaped and cut to maxTextLen, or why there is none.
func writeLogTail(b *strings.Builder, c *ContainerExplanation) {
	l := c.Logs
	if l == nil {
		return
	}
	switch {
	case l.Error != "":
		fmt.Fprintf(b, "    Log: not available: %s\n", text.SafeLine(l.Error, maxTextLen))
		return
	case len(l.Lines) == 0:
		fmt.Fprintf(b, "    Log: empty (%s)\n", logInstance(l))
		return
	}
	fmt.Fprintf(b, "    Log, last %d %s (%s):\n", len(l.Lines), text.Plural(len(l.Lines), "line", "lines"), logInstance(l))
	for _, line := range l.Lines {
		fmt.Fprintf(b, "      %s\n", text.LogLine(line))
	}
	if l.Truncated {
		b.WriteString("      (long lines cut at the byte limit, ending with …)\n")
	}
}

func logInstance(l *LogTail) string {
	if l.Previous {
		return "previous instance"
	}
	return "current instance"
}

// writeEvents writes a pod's folded events, escaped.
func writeEvents(b *strings.Builder, events []EventExplanation) {
	if len(events) == 0 {
		b.WriteString("  Events: none\n")
		return
	}
	b.WriteString("  Events (warnings first, newest first):\n")
	for _, ev := range events {
		age := ev.Age
		if age == "" {
			age = "<unknown>"
		}
		fmt.Fprintf(b, "    %s ago  %s  %s  x%d  %s\n", age, text.SafeLine(ev.Type, 0), text.SafeLine(ev.Reason, 0), ev.Count, text.SafeLine(ev.Message, maxTextLen))
	}
}
