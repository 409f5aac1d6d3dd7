package harness

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Table is a table as kubectl's printers lay it out: a header line and rows
// whose cells start where the header's column names start.
type Table struct {
	Header []string
	Rows   [][]string
}

// A header name is words joined by single spaces ("NOMINATED NODE");
// columns are at least three spaces apart.
var headerName = regexp.MustCompile(`\S+( \S+)*`)

// ParseTable cuts each line under the header's column offsets. It fails
// when a cell does not start exactly under its column name, so it also
// proves the columns are aligned. Empty lines are skipped.
func ParseTable(text string) (Table, error) {
	lines := strings.Split(strings.TrimRight(strings.ReplaceAll(text, "\r", ""), "\n"), "\n")
	if len(lines) == 0 || lines[0] == "" {
		return Table{}, fmt.Errorf("no header in %q", text)
	}
	var t Table
	var starts []int
	for _, loc := range headerName.FindAllStringIndex(lines[0], -1) {
		t.Header = append(t.Header, lines[0][loc[0]:loc[1]])
		starts = append(starts, loc[0])
	}
	for n, line := range lines[1:] {
		if line == "" {
			continue
		}
		cells, err := cut(line, starts)
		if err != nil {
			return Table{}, fmt.Errorf("line %d is not aligned with the header: %w\n%s", n+2, err, text)
		}
		t.Rows = append(t.Rows, cells)
	}
	return t, nil
}

func cut(line string, starts []int) ([]string, error) {
	cells := make([]string, len(starts))
	for i, start := range starts {
		if start >= len(line) {
			break
		}
		if start > 0 && line[start-1] != ' ' {
			return nil, fmt.Errorf("column %d does not start at offset %d in %q", i+1, start, line)
		}
		end := len(line)
		if i+1 < len(starts) && starts[i+1] < end {
			end = starts[i+1]
		}
		raw := line[start:end]
		cells[i] = strings.TrimSpace(raw)
		if cells[i] != "" && raw[0] == ' ' {
			return nil, fmt.Errorf("column %d starts after offset %d in %q", i+1, start, line)
		}
	}
	return cells, nil
}

// Column is the index of the named column, or -1.
func (t Table) Column(name string) int { return slices.Index(t.Header, name) }

// Without returns the table without the named columns.
func (t Table) Without(names ...string) Table {
	var keep []int
	out := Table{}
	for i, h := range t.Header {
		if !slices.Contains(names, h) {
			keep = append(keep, i)
			out.Header = append(out.Header, h)
		}
	}
	for _, r := range t.Rows {
		row := make([]string, 0, len(keep))
		for _, i := range keep {
			row = append(row, r[i])
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}

// ByKey indexes the rows by the cells of the named columns, joined by "/"
// (e.g. "NAMESPACE", "NAME").
func (t Table) ByKey(columns ...string) map[string][]string {
	idx := make([]int, len(columns))
	for i, c := range columns {
		idx[i] = t.Column(c)
	}
	out := map[string][]string{}
	for _, r := range t.Rows {
		parts := make([]string, len(idx))
		for i, c := range idx {
			if c >= 0 {
				parts[i] = r[c]
			}
		}
		out[strings.Join(parts, "/")] = r
	}
	return out
}
