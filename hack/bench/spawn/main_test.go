package main

import (
	"os"
	"testing"
	"time"
)

// writeSlowly writes each chunk to a pipe, pausing before each, and closes
// it long after the last: a first row stamped at the end shows.
func writeSlowly(t *testing.T, pause time.Duration, chunks ...string) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Close()
		defer time.Sleep(10 * pause)
		for _, c := range chunks {
			time.Sleep(pause)
			if _, err := w.WriteString(c); err != nil {
				return
			}
		}
	}()
	return r
}

func TestDrainTimesTheFirstRowAfterTheHeader(t *testing.T) {
	const pause = 50 * time.Millisecond
	for _, tc := range []struct {
		name   string
		skip   int
		chunks []string
		// rowChunk is the chunk (1-based) that brings the first row.
		rowChunk int
	}{
		{"header and rows apart", 1, []string{"NAME   READY\n", "web-1  1/1\n", "web-2  1/1\n"}, 2},
		{"header split over writes", 1, []string{"NAME ", "  READY\nweb-1", "  1/1\n"}, 2},
		{"header alone, ending a write", 1, []string{"NAME\n", "", "web-1\n"}, 3},
		{"rows without a header", 0, []string{`{"type":"SYNC"}` + "\n", `{"type":"SYNC"}` + "\n"}, 1},
	} {
		start := time.Now()
		out, err := drain(writeSlowly(t, pause, tc.chunks...), tc.skip, start)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var bytes, lines int64
		for _, c := range tc.chunks {
			bytes += int64(len(c))
			for _, b := range c {
				if b == '\n' {
					lines++
				}
			}
		}
		if out.bytes != bytes || out.lines != lines {
			t.Errorf("%s: %d bytes, %d lines; want %d, %d", tc.name, out.bytes, out.lines, bytes, lines)
		}
		// Sleeps overshoot on a busy machine: the bound above is loose,
		// but far from the end.
		earliest, latest := time.Duration(tc.rowChunk)*pause, time.Duration(tc.rowChunk+4)*pause
		if out.firstRow < earliest || out.firstRow > latest {
			t.Errorf("%s: first row after %s, want between %s and %s", tc.name, out.firstRow, earliest, latest)
		}
	}
}

func TestDrainWithoutRows(t *testing.T) {
	out, err := drain(writeSlowly(t, time.Millisecond, "NAME   READY\n"), 1, time.Now())
	if err != nil || out.firstRow != -1 || out.lines != 1 {
		t.Errorf("a header only: first row %s, %d lines, error %v; want -1, 1 line, none", out.firstRow, out.lines, err)
	}
}

func TestAfterLines(t *testing.T) {
	for _, tc := range []struct {
		in   string
		k    int
		want int
	}{
		{"a\nb\n", 0, 0}, {"a\nb\n", -2, 0}, {"a\nb\n", 1, 2}, {"a\nb\n", 2, 4}, {"a\nb\n", 3, -1}, {"abc", 1, -1},
	} {
		if got := afterLines([]byte(tc.in), tc.k); got != tc.want {
			t.Errorf("afterLines(%q, %d) = %d, want %d", tc.in, tc.k, got, tc.want)
		}
	}
}
