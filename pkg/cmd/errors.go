package cmd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
)

// exitError carries the exit code of an outcome whose explanation, if
// any, the run has written already.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// errSilent marks an exit code whose explanation is already on stderr.
var errSilent = errors.New("")

func usageError(format string, args ...interface{}) error {
	return podsync.UsageError{Err: fmt.Errorf(format, args...)}
}

// asUsage marks a flag parsing error as a usage error.
func asUsage(err error) error {
	if err == nil || errors.As(err, new(podsync.UsageError)) {
		return err
	}
	return podsync.UsageError{Err: err}
}

// outcomeError turns a run's outcome into the command's error: nil for
// exit 0, the reason of a run that could not go on (one line, printed by
// Execute), and otherwise a silent error carrying the exit code, since the
// summary has said everything.
func outcomeError(out podsync.Outcome) error {
	code := out.ExitCode()
	switch {
	case code == podsync.ExitOK:
		return nil
	case out.Verdict == podsync.Broken:
		return &exitError{code: code, err: out.Err}
	}
	return &exitError{code: code, err: errSilent}
}

// ExitCode is the process exit code for err: 0 for nil, 2 for bad input,
// the code an outcome carries, 1 otherwise (the cluster could not be used,
// or an internal error).
func ExitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return podsync.ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, new(podsync.UsageError)):
		return podsync.ExitUsage
	}
	return podsync.ExitCluster
}

// oneLine keeps an error to the single line the contract promises.
func oneLine(err error) string { return text.OneLine(err.Error(), 0) }

// optionalCount is a count flag that may be left out, and is then unset:
// its help text shows no made-up default.
type optionalCount struct {
	n   int
	set bool
}

func (c *optionalCount) String() string {
	if !c.set {
		return ""
	}
	return strconv.Itoa(c.n)
}

func (c *optionalCount) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("%q is not a count: must be 0 or more", s)
	}
	c.n, c.set = n, true
	return nil
}

func (c *optionalCount) Type() string { return "int" }

// value is the count, or check.Unset when the flag was not given.
func (c *optionalCount) value() int {
	if !c.set {
		return check.Unset
	}
	return c.n
}

// joinWords lists words for a help text: "a, b or c".
func joinWords(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
