package ghactions

import (
	"fmt"
	"io"
	"os"
)

// MaxStepSummary is the most a job summary may hold: GitHub refuses a
// step summary over 1 MiB; a decimal megabyte keeps clear of it however
// it is counted.
const MaxStepSummary = 1_000_000

// AppendStepSummary appends to the job summary file at path
// ($GITHUB_STEP_SUMMARY) what write writes, giving it the room left of
// MaxStepSummary: earlier steps' text in the same file counts too.
func AppendStepSummary(path string, write func(w io.Writer, room int) error) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close %s: %w", path, cerr)
		}
	}()
	return write(f, room(f))
}

// room is what is left of the job summary's MaxStepSummary.
func room(f *os.File) int {
	st, err := f.Stat()
	if err != nil {
		return MaxStepSummary
	}
	return max(0, MaxStepSummary-int(st.Size()))
}
