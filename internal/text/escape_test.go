package text

import (
	"strings"
	"testing"
)

func TestEscape(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text, tabs\tand\nnewlines", "plain text, tabs\tand\nnewlines"},
		{"\x1b]0;owned\x07\x1b[2J", "^[]0;owned^G^[[2J"},
		{"carriage\rreturn", `carriage\rreturn`},
		{"bell\x07 backspace\x08 del\x7f", "bell^G backspace^H del^?"},
		{"c1 \u009b31m csi", `c1 \u009b31m csi`},
		{"bad \x9b byte", `bad \x9b byte`},
		{"unicode ✓ stays", "unicode ✓ stays"},
		{"bidi \u202egnp.exe\u202c \u2066x\u2069 \u200fy", `bidi \u202egnp.exe\u202c \u2066x\u2069 \u200fy`},
	}
	for _, c := range cases {
		got := Escape(c.in)
		if got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
		if strings.ContainsAny(got, "\x1b\x07\r\x08\x7f\u009b\u202e\u2066\u200f") {
			t.Errorf("Escape(%q) = %q still holds a control character", c.in, got)
		}
	}
}

func TestSafeLine(t *testing.T) {
	got := SafeLine("line one\n\x1b[31mred\x1b[0m\r\nline three", 0)
	want := "line one ^[[31mred^[[0m line three"
	if got != want {
		t.Errorf("SafeLine = %q, want %q", got, want)
	}
}

func FuzzEscape(f *testing.F) {
	f.Add("\x1b]0;title\x07")
	f.Add("\u009b\x9b\r\n\t")
	f.Fuzz(func(t *testing.T, s string) {
		got := Escape(s)
		for _, r := range got {
			if r < 0x20 && r != '\t' && r != '\n' || r >= 0x7f && r < 0xa0 || bidi(r) {
				t.Fatalf("Escape(%q) = %q holds control character %U", s, got, r)
			}
		}
	})
}
