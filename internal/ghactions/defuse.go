// Package ghactions is the GitHub Actions runner's protocol, both sides
// of it: what podsync writes for the runner (text from the cluster
// defused, stop-commands pauses, ::error annotations, the job summary
// file, the settings a step's environment gives), and a model of how the
// runner reads a step's output (runner.go), for tests that replay
// podsync's real output through it.
package ghactions

import (
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The GitHub Actions runner runs a workflow command from any line of a
// step's output in two syntaxes: ::NAME::DATA when the line starts with
// :: after white space, and the legacy ##[NAME]DATA anywhere in a line. It
// ends a line at \n or \r, and its string comparisons follow culture rules
// that may skip invisible characters (#<U+200B>#[ can count as ##[).
// Defuse and DefuseJSON change text from the cluster just enough that
// neither syntax can match, whatever the stop-commands state is.

// Defuse makes text for a terminal or a log line unable to form a
// workflow command: a backslash goes before the [ of every ##[ and before
// a line's leading ::. Text without either is returned as it is.
func Defuse(s string) string {
	return defuse(s, `\[`, true)
}

// DefuseJSON does the same for JSON text without changing the value it
// decodes to: a [ after ## can only be inside a string (# is nothing
// else in JSON), where \u005b is the same character. A JSON line cannot
// start with ::.
func DefuseJSON(b []byte) []byte {
	if !strings.Contains(string(b), "#") {
		return b
	}
	return []byte(defuse(string(b), `\u005b`, false))
}

// Commandish reports whether Defuse would change s.
func Commandish(s string) bool {
	return Defuse(s) != s
}

// defuse writes s with bracket in place of the [ of ##[ and, when
// lineStarts, a backslash before a line's leading ::.
func defuse(s, bracket string, lineStarts bool) string {
	if !strings.ContainsAny(s, "#:") {
		return s
	}
	var b strings.Builder
	hashes, atStart := 0, lineStarts
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\n' || r == '\r':
			hashes, atStart = 0, lineStarts
		case ignorable(r):
		case atStart && unicode.IsSpace(r):
		case atStart && r == ':' && nextVisible(s[i+size:]) == ':':
			b.WriteByte('\\')
			atStart, hashes = false, 0
		case r == '#':
			hashes++
			atStart = false
		case r == '[' && hashes >= 2:
			b.WriteString(bracket)
			i += size
			hashes, atStart = 0, false
			continue
		default:
			hashes, atStart = 0, false
		}
		b.WriteString(s[i : i+size])
		i += size
	}
	return b.String()
}

// nextVisible is the first rune of s that ignorable does not skip.
func nextVisible(s string) rune {
	for _, r := range s {
		if !ignorable(r) {
			return r
		}
	}
	return utf8.RuneError
}

// ignorable: a character a culture-aware comparison may skip (format and
// control characters, variation selectors), but not the line ends and
// white space the runner itself looks at.
func ignorable(r rune) bool {
	if r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r' {
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

// DefusedWriter writes through Defuse; Raw is the writer below it, for
// podsync's own workflow commands. Each Write is taken to start a line, as
// every write of podsync's stderr does.
type DefusedWriter struct{ Raw io.Writer }

func (d *DefusedWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(d.Raw, Defuse(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
