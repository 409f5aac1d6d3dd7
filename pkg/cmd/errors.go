package cmd

import (
	"errors"
	"fmt"
)

// exitError carries the exit code that an error must end the process with.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageError(format string, args ...interface{}) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

func asUsage(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{code: 2, err: err}
}

func clusterError(err error) error {
	return &exitError{code: 1, err: err}
}

// ExitCode is the process exit code for err: 0 for nil, the code an error
// carries, 1 otherwise (the cluster could not be used, or an internal error).
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}
