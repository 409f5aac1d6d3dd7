package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
)

const (
	beginMarker = "<!-- flags:begin -->"
	endMarker   = "<!-- flags:end -->"
)

// row is one line of the table: the flag as typed, its usage and default.
type row struct {
	flag, meaning, def string
}

// flagRows lists the flags of fs that are not in skip, hidden or deprecated,
// sorted by long name: the order of `kubectl podsync -h`, so a reader finds a
// flag in the same place in both, and moving a registration in the code does
// not reorder the README.
func flagRows(fs *pflag.FlagSet, skip map[string]bool) []row {
	var flags []*pflag.Flag
	fs.VisitAll(func(f *pflag.Flag) {
		if !skip[f.Name] && !f.Hidden && f.Deprecated == "" {
			flags = append(flags, f)
		}
	})
	sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	rows := make([]row, 0, len(flags))
	for _, f := range flags {
		varname, usage := pflag.UnquoteUsage(f)
		rows = append(rows, row{flag: flagSyntax(f, varname), meaning: usage, def: f.DefValue})
	}
	return rows
}

// flagSyntax writes a flag as `-h` does: shorthand, long name, value name.
func flagSyntax(f *pflag.Flag, varname string) string {
	s := "--" + f.Name
	if f.Shorthand != "" {
		s = "-" + f.Shorthand + ", " + s
	}
	if varname != "" {
		s += " " + varname
	}
	if f.NoOptDefVal != "" && f.Value.Type() != "bool" {
		s += "[=" + f.NoOptDefVal + "]"
	}
	return s
}

// renderTable writes rows as a Markdown table.
func renderTable(rows []row) string {
	var b strings.Builder
	b.WriteString("| flag | meaning | default |\n|---|---|---|\n")
	for _, r := range rows {
		def := ""
		if r.def != "" && r.def != "[]" {
			def = codeSpan(r.def)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", codeSpan(r.flag), cell(r.meaning), def)
	}
	return b.String()
}

// cell makes text safe inside a table cell: one line, no bare pipe, no tag.
func cell(s string) string {
	s = text.OneLine(s, 0)
	return strings.NewReplacer("|", `\|`, "<", "&lt;").Replace(s)
}

// codeSpan quotes s as inline code, with a longer fence when s holds a
// backtick; a pipe is escaped, as GitHub splits cells before code spans.
func codeSpan(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	if strings.Contains(s, "`") {
		return "`` " + s + " ``"
	}
	return "`" + s + "`"
}

// replaceBetween puts block between the markers of doc, each of which must
// appear once, begin first.
func replaceBetween(doc, block string) (string, error) {
	for _, m := range []string{beginMarker, endMarker} {
		switch n := strings.Count(doc, m); {
		case n == 0:
			return "", fmt.Errorf("no %s marker", m)
		case n > 1:
			return "", fmt.Errorf("%d %s markers, want one", n, m)
		}
	}
	before, rest, _ := strings.Cut(doc, beginMarker)
	if !strings.Contains(rest, endMarker) {
		return "", errors.New(endMarker + " comes before " + beginMarker)
	}
	_, after, _ := strings.Cut(rest, endMarker)
	return before + beginMarker + "\n" + block + endMarker + after, nil
}

// firstDiffLine is the 1-based number of the first line where a and b differ.
func firstDiffLine(a, b string) int {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}
