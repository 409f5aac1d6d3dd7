package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

func sysProcAttr(detach bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setsid: true}
	if !detach {
		attr.Pdeathsig = syscall.SIGKILL
	}
	return attr
}

// procStat returns the fields of /proc/PID/stat after the command name,
// which may itself contain spaces and parentheses.
func procStat(pid int) ([][]byte, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil, errors.New("malformed stat")
	}
	return bytes.Fields(data[i+1:]), nil
}

// processStartTime is field 22 of /proc/PID/stat (clock ticks since boot);
// 0 if unknown.
func processStartTime(pid int) uint64 {
	f, err := procStat(pid)
	if err != nil || len(f) < 20 {
		return 0
	}
	t, _ := strconv.ParseUint(string(f[19]), 10, 64)
	return t
}

// isProcess reports whether pid is alive (a zombie is not) and, when started
// is known, whether it is the process that started then.
func isProcess(pid int, started uint64) bool {
	f, err := procStat(pid)
	if err != nil || len(f) < 20 {
		return false
	}
	if string(f[0]) == "X" || string(f[0]) == "Z" && !exiting(pid) {
		return false
	}
	if started == 0 {
		return true
	}
	t, _ := strconv.ParseUint(string(f[19]), 10, 64)
	return t == started
}

// exiting reports whether a process whose first thread is a zombie still
// has other threads. Killed, a Go program's first thread may end first;
// the last thread to end closes the files, and a server's listening
// socket with them: until then its port cannot be bound again.
func exiting(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	return err == nil && len(tasks) > 1
}
