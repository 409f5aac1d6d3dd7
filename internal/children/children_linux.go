//go:build linux

package children

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Adopt makes the process the reaper of its descendants: a process whose
// parent ends (a plugin's shell) becomes its child, so that Kill finds it.
func Adopt() {
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// forks is taken once, by the first Kill, and never given back.
var forks sync.Once

// Kill sends SIGKILL to every descendant of the process, parents before
// their children (a parent that saw its child die could otherwise end in
// a way of its own choosing; its children, adopted, are still found). It
// is for the end of the process: from its start on,
// no child can be started any more, so that none (a credential plugin a
// goroutine was about to run) starts after the sweep, holds stderr open
// and keeps the reader of the pipe waiting.
func Kill() {
	// Go forks and execs holding syscall.ForkLock for writing, until the
	// child has exec'd or failed to: once it is held for reading, every
	// child already started is in /proc, and every later fork waits for
	// ever.
	forks.Do(syscall.ForkLock.RLock)
	if !hasChildren() {
		return
	}
	// A descendant may fork between the scan and its SIGKILL: scan again
	// until a scan finds none not killed yet. A killed process forks no
	// more, so this ends; the bound only guards against a /proc that lies.
	killed := map[int]bool{}
	for range 100 {
		fresh := 0
		for _, pid := range descendants() {
			if !killed[pid] {
				killed[pid] = true
				fresh++
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if fresh == 0 {
			return
		}
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

// descendants lists the process's descendants that are still alive (a
// zombie has ended and holds nothing open), the nearest first.
func descendants() []int {
	self := os.Getpid()
	procs := readProcs()
	parents := make(map[int]int, len(procs))
	for pid, p := range procs {
		parents[pid] = p.ppid
	}
	depths := map[int]int{}
	var out []int
	for pid, p := range procs {
		if d := depth(pid, self, parents); !p.zombie && d > 0 {
			depths[pid] = d
			out = append(out, pid)
		}
	}
	slices.SortFunc(out, func(a, b int) int { return depths[a] - depths[b] })
	return out
}

// depth is how many generations pid is below ancestor: 1 for a child, 0
// for a process that does not descend from it.
func depth(pid, ancestor int, parents map[int]int) int {
	for d := range len(parents) {
		ppid, ok := parents[pid]
		if !ok || ppid <= 1 {
			return 0
		}
		if ppid == ancestor {
			return d + 1
		}
		pid = ppid
	}
	return 0
}

// proc is what Kill needs of a process.
type proc struct {
	ppid   int
	zombie bool
}

// readProcs reads each process's parent and state from /proc.
func readProcs() map[int]proc {
	out := map[int]proc{}
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
			out[pid] = proc{ppid: ppid, zombie: fields[0] == "Z" || fields[0] == "X"}
		}
	}
	return out
}
