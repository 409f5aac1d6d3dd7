package output

import (
	"bytes"
	"io"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
)

// ColorWanted decides --color: auto colours only a terminal, and never when
// NO_COLOR is set or TERM is dumb, as kubectl decides for its own colours.
func ColorWanted(mode string, out io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	return printers.AllowsColorOutput(out)
}

const colorReset = "\x1b[0m"

// typeStyles are each message type's word after pod/NAME in -o name, and
// the colour of its name in the EVENT column.
var typeStyles = map[message.Type]struct{ verb, color string }{
	message.Sync:      {"synced", "\x1b[34m"},
	message.Add:       {"added", "\x1b[32m"},
	message.Update:    {"updated", "\x1b[33m"},
	message.Gone:      {"gone", "\x1b[31m"},
	message.Diagnosis: {"diagnosed", "\x1b[36m"},
	message.Warning:   {"warning", "\x1b[35m"},
	message.Normal:    {"normal", "\x1b[90m"},
}

// verb is the word -o name prints after pod/NAME.
func verb(k message.Type) string {
	if st, ok := typeStyles[k]; ok {
		return st.verb
	}
	return "changed"
}

// eventColors maps each type's name, as it starts a table line, to its
// colour.
func eventColors() map[string]string {
	m := map[string]string{}
	for _, k := range message.Types() {
		m[k.String()] = typeStyles[k].color
	}
	return m
}

// colorize wraps the event name that starts each table line. It runs after
// the tabwriter has aligned the text, so escape codes never count as width.
func colorize(text []byte, colors map[string]string) []byte {
	return colorCells(text, func(line []byte) (int, int, string) {
		end := bytes.IndexByte(line, ' ')
		if end < 0 {
			end = len(line)
		}
		return 0, end, colors[string(line[:end])]
	})
}

// colorCells wraps one cell of each line of text, line[start:end] as cell
// tells it, in the colour cell gives; a line whose colour is "" stays as
// it is.
func colorCells(text []byte, cell func(line []byte) (start, end int, color string)) []byte {
	var out bytes.Buffer
	for len(text) > 0 {
		line := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line = text[:i+1]
		}
		text = text[len(line):]
		start, end, code := cell(line)
		if code == "" {
			out.Write(line)
			continue
		}
		out.Write(line[:start])
		out.WriteString(code)
		out.Write(line[start:end])
		out.WriteString(colorReset)
		out.Write(line[end:])
	}
	return out.Bytes()
}
