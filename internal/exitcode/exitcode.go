// Package exitcode reads the exit code of a finished child process the way
// a shell reports it, for the benchmark and the end-to-end tests.
package exitcode

import (
	"errors"
	"os/exec"
	"syscall"
)

// Of is 0 for a nil error, the process's exit code, 128+N for a process
// killed by signal N, and -1 when the process could not run at all.
func Of(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}
