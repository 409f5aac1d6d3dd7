//go:build linux

package children

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Adopt makes the process the reaper of its descendants: a process whose
// parent ends (a plugin's shell) becomes its child, so that Kill finds it.
func Adopt() {
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// Kill sends SIGKILL to every descendant of the process, the deepest
// first known before any is killed (a killed parent's children are then
// adopted, not lost).
func Kill() {
	if !hasChildren() {
		return
	}
	self := os.Getpid()
	parents := parentsByPID()
	var victims []int
	for pid := range parents {
		if descends(pid, self, parents) {
			victims = append(victims, pid)
		}
	}
	for _, pid := range victims {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// hasChildren says whether the process has a child, running or ended, without
// reaping it: a process without one has no descendant either, since Adopt
// makes it the parent of any whose parent ended. A run most often has
// none, and then no scan of every process slows its end.
func hasChildren() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WSTOPPED|unix.WCONTINUED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err != unix.ECHILD
}

// descends reports whether pid is a descendant of ancestor.
func descends(pid, ancestor int, parents map[int]int) bool {
	for range len(parents) {
		ppid, ok := parents[pid]
		if !ok || ppid <= 1 {
			return false
		}
		if ppid == ancestor {
			return true
		}
		pid = ppid
	}
	return false
}

// parentsByPID reads each process's parent from /proc.
func parentsByPID() map[int]int {
	out := map[int]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		rest := string(data)
		if i := strings.LastIndexByte(rest, ')'); i >= 0 {
			rest = rest[i+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(fields[1]); err == nil {
			out[pid] = ppid
		}
	}
	return out
}
