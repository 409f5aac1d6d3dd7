package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// clockTick is USER_HZ, which is 100 on every Linux architecture Go runs on.
const clockTick = 100

// procCPU is the user+system CPU time of a running process.
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read process stat: %w", err)
	}
	// The command name is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	// Fields 14 and 15 of stat: utime and stime; f[0] is field 3.
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat times", pid)
	}
	return time.Duration(ut+st) * time.Second / clockTick, nil
}

// procHWM is the peak resident set of a running process.
func procHWM(pid int) (int64, error) { return procStatus(pid, "VmHWM:") }

// procRSS is the resident set of a running process.
func procRSS(pid int) (int64, error) { return procStatus(pid, "VmRSS:") }

// procStatus reads one of the kB fields of /proc/PID/status, in bytes.
func procStatus(pid int, field string) (int64, error) {
	return kbField(fmt.Sprintf("/proc/%d/status", pid), field)
}

// kbField reads a "Field:   123 kB" line of a /proc file, in bytes.
func kbField(path, field string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse %s %q of %s: %w", field, v, path, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no %s in %s", field, path)
}

// resetHWM sets a process's peak resident set back to its resident set
// now (Linux 4.0 and later, for a process this user may trace).
func resetHWM(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// availableMemory is what a new process can take before the kernel has to
// swap or kill: MemAvailable, or less when this process's cgroup has a
// lower limit.
func availableMemory() (int64, error) {
	avail, err := kbField("/proc/meminfo", "MemAvailable:")
	if err != nil {
		return 0, err
	}
	limit, err1 := os.ReadFile("/sys/fs/cgroup/memory.max")
	used, err2 := os.ReadFile("/sys/fs/cgroup/memory.current")
	if err1 != nil || err2 != nil {
		return avail, nil
	}
	l, err1 := strconv.ParseInt(strings.TrimSpace(string(limit)), 10, 64)
	u, err2 := strconv.ParseInt(strings.TrimSpace(string(used)), 10, 64)
	if err1 == nil && err2 == nil && l-u < avail {
		return max(0, l-u), nil
	}
	return avail, nil
}

func readMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPUModel = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if total, err := kbField("/proc/meminfo", "MemTotal:"); err == nil {
		m.MemoryGiB = float64(total) / (1 << 30)
	}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(data))
		if len(f) >= 3 {
			m.Load = strings.Join(f[:3], " ")
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	return m
}

// otherAPIServers lists the kube-apiserver processes other than ours:
// other developers' test clusters share the CPUs.
func otherAPIServers(ours int) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == ours {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(d, "comm"))
		if err == nil && strings.TrimSpace(string(comm)) == "kube-apiserver" {
			out = append(out, pid)
		}
	}
	return out
}

// peakMeter measures how much a process's resident set grows while a
// client runs: the API server's memory for serving it.
type peakMeter struct {
	pid int
	// reset: the kernel's own peak (VmHWM), reset before each client
	// through clear_refs; else VmRSS sampled every sampleEvery.
	reset bool
}

const sampleEvery = 20 * time.Millisecond

// newPeakMeter picks the kernel's peak when this kernel lets this user
// reset it, and sampling otherwise.
func newPeakMeter(pid int) *peakMeter {
	return &peakMeter{pid: pid, reset: resetHWM(pid) == nil}
}

func (m *peakMeter) method() string {
	switch {
	case m == nil:
		return ""
	case m.reset:
		return "its VmHWM, reset through /proc/PID/clear_refs before the client"
	}
	return fmt.Sprintf("the highest of its VmRSS read every %s (this kernel did not let the bench reset VmHWM)", sampleEvery)
}

// start begins a span; stop ends it and returns the resident set at the
// start and the peak in between, in bytes (-1, -1 when not measured).
func (m *peakMeter) start() (stop func() (idle, peak int64)) {
	none := func() (int64, int64) { return -1, -1 }
	if m == nil {
		return none
	}
	if m.reset && resetHWM(m.pid) != nil {
		return none
	}
	idle, err := procRSS(m.pid)
	if err != nil {
		return none
	}
	if m.reset {
		return func() (int64, int64) {
			peak, err := procHWM(m.pid)
			if err != nil {
				return -1, -1
			}
			// The kernel updates VmHWM lazily: a rise between the reset and
			// the read of idle that is gone again may be missing from it.
			return idle, max(idle, peak)
		}
	}
	done, result := make(chan struct{}), make(chan int64)
	go func() {
		peak := idle
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			if rss, err := procRSS(m.pid); err == nil {
				peak = max(peak, rss)
			}
			select {
			case <-done:
				result <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() (int64, int64) {
		close(done)
		return idle, <-result
	}
}
