package output

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"
)

// ColorWanted decides --color: auto colours only a terminal, and never when
// NO_COLOR is set (https://no-color.org).
func ColorWanted(mode string, out io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false
	}
	f, ok := out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

var eventColors = map[string]string{
	"SYNC":   "\x1b[34m",
	"ADD":    "\x1b[32m",
	"UPDATE": "\x1b[33m",
	"GONE":   "\x1b[31m",
}

const colorReset = "\x1b[0m"

// colorize wraps the event name that starts each table line. It runs after
// the tabwriter has aligned the text, so escape codes never count as width.
func colorize(text []byte) []byte {
	var out bytes.Buffer
	for len(text) > 0 {
		line := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line = text[:i+1]
		}
		text = text[len(line):]
		word := line
		if i := bytes.IndexByte(line, ' '); i >= 0 {
			word = line[:i]
		}
		code, ok := eventColors[string(word)]
		if !ok {
			out.Write(line)
			continue
		}
		out.WriteString(code)
		out.Write(word)
		out.WriteString(colorReset)
		out.Write(line[len(word):])
	}
	return out.Bytes()
}
