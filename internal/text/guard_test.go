package text

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kubectl-podsync/kubectl-podsync/internal/ghactions"
)

// hostile are texts a pod's author can write, each of which the runner
// reads as a workflow command when printed as it is.
var hostile = []string{
	"##[error]legacy anywhere",
	"text before ##[add-mask]secret",
	"##[stop-commands]x",
	"###[warning]three hashes",
	"#\u200b#[error]zero width between",
	"##\u00ad[error]soft hyphen",
	"::error::v2 at the start",
	"   \t::add-mask::after white space",
	"\u2003::error::after an em space",
	"\u200b::error::after a zero width space",
	":\u200b:error::split colons",
	"first line\n::stop-commands::x",
	"first line\r::error::after a carriage return",
	"##[ERROR]upper case",
}

func TestLineGuardDefusesEachLine(t *testing.T) {
	var b strings.Builder
	g := &LineGuard{Out: &b, GitHub: true, What: "a plugin"}
	for _, s := range hostile {
		// In pieces, as a pipe may deliver them.
		for _, piece := range []string{s[:len(s)/2], s[len(s)/2:], "\n"} {
			_, _ = g.Write([]byte(piece))
		}
	}
	if cmds := ghactions.Strict(b.String()); len(cmds) > 0 {
		t.Errorf("the runner runs %q from\n%s", cmds[0].Name, b.String())
	}
	if n := strings.Count(b.String(), "\n"); n < len(hostile) {
		t.Errorf("%d lines for %d written:\n%s", n, len(hostile), b.String())
	}
}

func TestLineGuardLines(t *testing.T) {
	cases := []struct{ in, want string }{
		{"a\nb\n", "a\nb\n"},
		{"a\r\nb\r\n", "a\nb\n"},
		{"a\rb\n", "a\nb\n"},
		{"bell\a and \x1b[31mred\n", "bell^G and ^[[31mred\n"},
		{"no end", ""},
	}
	for _, c := range cases {
		var b strings.Builder
		g := &LineGuard{Out: &b}
		for i := range len(c.in) {
			_, _ = g.Write([]byte(c.in[i : i+1]))
		}
		if b.String() != c.want {
			t.Errorf("%q: wrote %q, want %q", c.in, b.String(), c.want)
		}
	}
	var b strings.Builder
	g := &LineGuard{Out: &b}
	_, _ = g.Write([]byte("Password: "))
	g.Flush()
	if b.String() != "Password: \n" {
		t.Errorf("a flushed prompt is %q", b.String())
	}
}

func TestLineGuardBounds(t *testing.T) {
	var b strings.Builder
	g := &LineGuard{Out: &b, What: "a credential plugin"}
	long := strings.Repeat("é", 3*GuardLineLen)
	for range 200 {
		_, _ = g.Write([]byte(long + "\n"))
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for _, l := range lines[:len(lines)-1] {
		if n := utf8.RuneCountInString(l); n != GuardLineLen {
			t.Fatalf("a line of %d characters, want %d", n, GuardLineLen)
		}
	}
	if want := "podsync: a credential plugin wrote more than 64 KiB; the rest is dropped"; lines[len(lines)-1] != want {
		t.Errorf("last line %q, want %q", lines[len(lines)-1], want)
	}
	if b.Len() > GuardTotal {
		t.Errorf("wrote %d bytes, more than %d", b.Len(), GuardTotal)
	}
}
