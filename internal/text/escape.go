package text

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"k8s.io/cli-runtime/pkg/printers"
)

// Escape makes text that someone in the cluster wrote (container logs,
// Event messages, status messages) safe to print on a terminal: it goes
// through kubectl's printers.EscapeTerminal (ESC becomes ^[, CR becomes
// \r), and then, since that rule leaves the other control characters
// alone, every other C0 or C1 control character but tab and newline is
// shown as ^X or \u009b, the marks and overrides that reorder bidirectional
// text as \u202e, and bytes that are not UTF-8 as \xNN. BEL, a lone CSI
// (U+009B), a backspace or a right-to-left override can no longer act on
// the terminal or hide what follows them; the text stays readable.
func Escape(s string) string {
	s = printers.EscapeTerminal(s)
	if isPlain(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t' || r == '\n':
			b.WriteRune(r)
		case r < 0x20:
			b.WriteByte('^')
			b.WriteByte(byte(r) + '@')
		case r == 0x7f:
			b.WriteString("^?")
		case r >= 0x80 && r < 0xa0 || bidi(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isPlain reports whether s holds no character Escape would change.
func isPlain(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r < 0x20 && r != '\t' && r != '\n' || r >= 0x7f && r < 0xa0 || bidi(r) {
			return false
		}
		i += size
	}
	return true
}

// ControlChar reports whether Escape shows r escaped: a C0 control
// character but tab and newline, DEL, a C1 control character, or a bidi
// control.
func ControlChar(r rune) bool {
	return r < 0x20 && r != '\t' && r != '\n' || r >= 0x7f && r < 0xa0 || bidi(r)
}

// bidi reports whether r reorders the text around it: the left-to-right
// and right-to-left marks, embeddings, overrides and isolates.
func bidi(r rune) bool {
	return r == 0x200e || r == 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// SafeLine is OneLine, then Escape: one line of untrusted text for a
// terminal.
func SafeLine(s string, limit int) string {
	return Escape(OneLine(s, limit))
}
