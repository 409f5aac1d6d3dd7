//go:build unix && !linux

package localcluster

import (
	"errors"
	"syscall"
)

// Without Pdeathsig, processes of an aborted test run outlive it; Stop (or
// `go run ./hack/cluster down`) still ends them.
func sysProcAttr(bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

func processStartTime(int) uint64 { return 0 }

// isProcess can only tell that the PID is in use; it cannot detect reuse.
func isProcess(pid int, _ uint64) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
