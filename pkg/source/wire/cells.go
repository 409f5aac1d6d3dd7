package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// CellTable is a table listed without objects (includeObject=None), each
// row's cells still as the server wrote them. They are read once the row is
// paired with its pod (RowCells), so that the words every pod repeats are
// looked up in the JSON as written and shared, instead of each being
// decoded, boxed and then swapped for the shared copy: at 50,000 pods the
// standard decoding of the cells was a tenth of a table's CPU.
type CellTable struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ListMeta   `json:"metadata,omitempty"`
	ColumnDefinitions []metav1.TableColumnDefinition `json:"columnDefinitions"`
	Rows              []struct {
		Cells RawCells `json:"cells"`
	} `json:"rows"`
}

// RawCells keeps a row's cells as a slice of the answer's bytes, which the
// table owns and never changes (so no copy, which json.RawMessage makes).
type RawCells []byte

func (c *RawCells) UnmarshalJSON(b []byte) error {
	*c = b
	return nil
}

func DecodeCellTable(raw []byte) (*CellTable, error) {
	var table CellTable
	if err := utiljson.Unmarshal(raw, &table); err != nil {
		return nil, fmt.Errorf("decode table: %w", err)
	}
	if table.Kind != "Table" {
		return nil, fmt.Errorf("the server answered with %q instead of a Table: it does not support server-side printing", table.Kind)
	}
	return &table, nil
}

// RowCells gives row its cells, read from raw into out's space. A pod's
// cells are strings and integers: those are read here exactly as the
// standard decoding with integers kept (utiljson, as kubectl decodes) reads
// them; a row holding anything else is decoded that way.
func RowCells(row *PodRow, raw RawCells, columns []metav1.TableColumnDefinition, out []any) error {
	row.Columns = columns
	var cells []any
	ok := false
	if fast() {
		cells, ok = readCells(raw, out, ColumnIndex(columns, "Name"), ColumnIndex(columns, "IP"), row.Meta().Name)
	}
	if !ok {
		cells = nil
		if err := utiljson.Unmarshal(raw, &cells); err != nil {
			return fmt.Errorf("decode cells: %w", err)
		}
		row.Cells = cells
		InternCells(row)
		return nil
	}
	row.Cells = cells
	return nil
}

// readCells appends the cells of raw to out. The name cell, when it is the
// pod's name, shares the pod's string; the IP is the pod's own; any other
// string is shared with every row that has it (internJSON).
func readCells(raw []byte, out []any, name, ip int, podName string) ([]any, bool) {
	b := skipSpace(raw)
	if len(b) == 0 || b[0] != '[' {
		return nil, false
	}
	b = skipSpace(b[1:])
	for i := 0; len(b) > 0 && b[0] != ']'; i++ {
		var v any
		var ok bool
		if v, b, ok = readCell(b, i == name, i == ip, podName); !ok {
			return nil, false
		}
		out = append(out, v)
		if b = skipSpace(b); len(b) > 0 && b[0] == ',' {
			b = skipSpace(b[1:])
		}
	}
	if len(b) == 0 || len(skipSpace(b[1:])) != 0 {
		return nil, false
	}
	return out, true
}

// readCell reads one string or integer cell from the front of b, which
// the decoder of the whole table has checked is valid JSON.
func readCell(b []byte, isName, isIP bool, podName string) (any, []byte, bool) {
	switch {
	case b[0] == '"':
		end, escaped := stringEnd(b)
		if end < 0 {
			return nil, nil, false
		}
		token, rest := b[:end], b[end:]
		// Bytes that are not UTF-8 decode to U+FFFD, as the standard
		// decoding reads them: such a string is decoded, not copied.
		escaped = escaped || !utf8.Valid(token)
		switch {
		case escaped && (isName || isIP):
			var s string
			if err := json.Unmarshal(token, &s); err != nil {
				return nil, nil, false
			}
			return s, rest, true
		case isName && string(token[1:end-1]) == podName:
			return podName, rest, true
		case isName || isIP:
			return string(token[1 : end-1]), rest, true
		}
		v, ok := internJSON(token, escaped)
		return v, rest, ok
	case b[0] == '-' || (b[0] >= '0' && b[0] <= '9'):
		end := bytes.IndexAny(b, ",] \t\r\n")
		if end < 0 {
			return nil, nil, false
		}
		// Anything but a plain integer in int64's range (a fraction, an
		// exponent, an overflow) is a float64 to utiljson: not read here.
		n, err := strconv.ParseInt(string(b[:end]), 10, 64)
		return n, b[end:], err == nil
	}
	return nil, nil, false
}

// stringEnd is the length of the JSON string at the front of b, closing
// quote included, and whether it holds an escape; -1 if it does not end.
func stringEnd(b []byte) (int, bool) {
	escaped := false
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			return i + 1, escaped
		}
	}
	return -1, false
}

func skipSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}

// internedJSON maps a string as JSON writes it (quotes and escapes
// included) to the shared boxed string it decodes to. The server escapes
// <, > and &, so "<none>" comes as "\u003cnone\u003e": looking the token
// up as written skips decoding it.
var internedJSON = struct {
	sync.Mutex
	m map[string]any
}{m: map[string]any{}}

func internJSON(token []byte, escaped bool) (any, bool) {
	internedJSON.Lock()
	v, ok := internedJSON.m[string(token)]
	internedJSON.Unlock()
	if ok {
		return v, true
	}
	s := string(token[1 : len(token)-1])
	if escaped {
		if err := json.Unmarshal(token, &s); err != nil {
			return nil, false
		}
	}
	v = internBoxed(s)
	if len(token) <= maxInternedLen {
		internedJSON.Lock()
		if len(internedJSON.m) < maxInterned {
			internedJSON.m[string(token)] = v
		}
		internedJSON.Unlock()
	}
	return v, true
}
