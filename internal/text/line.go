package text

import "strings"

// MaxLineLen bounds one line of text from the cluster in the text outputs;
// termination messages and log lines can be kilobytes long.
const MaxLineLen = 300

// OneLine folds whitespace (termination messages are often multi-line
// logs, errors wrap server answers) and cuts the text to limit runes; a
// limit of 0 keeps it whole.
func OneLine(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if limit <= 0 || len(r) <= limit {
		return s
	}
	return string(r[:limit-1]) + "…"
}

// LogLine is one log line made safe for a terminal and cut to a
// readable length; tabs stay.
func LogLine(line string) string {
	r := []rune(line)
	if len(r) > MaxLineLen {
		line = string(r[:MaxLineLen-1]) + "…"
	}
	return Escape(strings.ReplaceAll(line, "\n", " "))
}

// Plural is one when n is 1, else many: "1 pod", "2 pods".
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
