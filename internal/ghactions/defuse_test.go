package ghactions

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
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

func TestHostileTextsAreCommands(t *testing.T) {
	// The model must see each of these as a command, or the tests that
	// use it prove nothing.
	for _, s := range hostile {
		if len(Strict(s)) == 0 {
			t.Errorf("the runner model finds no command in %q", s)
		}
	}
}

func TestDefuse(t *testing.T) {
	for _, s := range hostile {
		got := Defuse(s)
		if cmds := Strict(got); len(cmds) > 0 {
			t.Errorf("Defuse(%q) = %q still runs %q", s, got, cmds[0].Name)
		}
		if !Commandish(s) {
			t.Errorf("Commandish(%q) = false", s)
		}
	}
	cases := []struct{ in, want string }{
		{"##[error]x", `##\[error]x`},
		{"  ::error::x", `  \::error::x`},
		{"a ::error::x", "a ::error::x"},
		{"# [ not a command, ## neither", "# [ not a command, ## neither"},
		{"plain", "plain"},
	}
	for _, c := range cases {
		if got := Defuse(c.in); got != c.want {
			t.Errorf("Defuse(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestDefuseJSONDecodesEqual(t *testing.T) {
	for _, s := range hostile {
		in, err := json.Marshal(map[string]any{"msg": s, "list": []string{s, "##"}, s: 1})
		if err != nil {
			t.Fatal(err)
		}
		out := DefuseJSON(in)
		var a, b any
		if err := json.Unmarshal(in, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &b); err != nil {
			t.Fatalf("DefuseJSON(%s) = %s: not JSON: %v", in, out, err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("DefuseJSON(%s) = %s decodes to %v, want %v", in, out, b, a)
		}
		if cmds := Strict(string(out)); len(cmds) > 0 {
			t.Errorf("DefuseJSON(%s) = %s still runs %q", in, out, cmds[0].Name)
		}
	}
}

func TestDefusedWriter(t *testing.T) {
	var b strings.Builder
	w := &DefusedWriter{Raw: &b}
	for _, s := range hostile {
		if _, err := w.Write([]byte("warning: " + s + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	if cmds := Strict(b.String()); len(cmds) > 0 {
		t.Errorf("the runner runs %q from %q", cmds[0].Name, cmds[0].Line)
	}
}
