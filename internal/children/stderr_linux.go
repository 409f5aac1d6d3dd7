//go:build linux

package children

import (
	"errors"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Stderr is what children write on their standard error (file descriptor
// 2, which they inherit): a pipe that the process reads, so that their
// text (an exec credential plugin's, which client-go passes the process's
// own stderr) reaches the real stderr only through a writer of the
// process's choosing.
type Stderr struct {
	pipe *os.File
	// busy is held while a piece read is being written.
	busy sync.Mutex
}

// flushAfter is how long a partial line (a prompt) waits for its end.
const flushAfter = 100 * time.Millisecond

// RouteStderr puts a pipe in place of file descriptor 2 and returns the
// stderr the process had, for its own writing, and the pipe to Copy from;
// nil when it cannot (file descriptor 2 closed), and then children write
// to os.Stderr as before. A crash of the process is still written to the
// real stderr. Call it before any child is started.
func RouteStderr() (*os.File, *Stderr) {
	fd, err := unix.FcntlInt(2, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return os.Stderr, nil
	}
	real := os.NewFile(uintptr(fd), "/dev/stderr")
	r, w, err := os.Pipe()
	if err != nil {
		_ = real.Close()
		return os.Stderr, nil
	}
	defer w.Close()
	// Not close-on-exec: every child inherits it as its stderr.
	if err := unix.Dup3(int(w.Fd()), 2, 0); err != nil {
		_ = r.Close()
		_ = real.Close()
		return os.Stderr, nil
	}
	_ = debug.SetCrashOutput(real, debug.CrashOptions{})
	return real, &Stderr{pipe: r}
}

// Copy writes what children write on stderr to w as it comes, and calls
// flush when a partial line has waited flushAfter for its end. It returns
// when the pipe fails, which it does not while the process runs.
func (s *Stderr) Copy(w io.Writer, flush func()) {
	buf := make([]byte, 32<<10)
	pending := false
	for {
		deadline := time.Time{}
		if pending {
			deadline = time.Now().Add(flushAfter)
		}
		_ = s.pipe.SetReadDeadline(deadline)
		n, err := s.pipe.Read(buf)
		s.busy.Lock()
		if n > 0 {
			_, _ = w.Write(buf[:n])
			pending = true
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			flush()
			pending, err = false, nil
		}
		s.busy.Unlock()
		if err != nil {
			return
		}
	}
}

// Drain waits, at most limit, until Copy has written what children wrote
// (the pipe is empty and nothing is being written), then calls flush.
func (s *Stderr) Drain(limit time.Duration, flush func()) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		n, err := unix.IoctlGetInt(int(s.fd()), unix.TIOCINQ)
		if err != nil {
			break
		}
		if n == 0 && s.busy.TryLock() {
			s.busy.Unlock()
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	flush()
}

// fd is the pipe's read end, without the blocking mode that File.Fd sets.
func (s *Stderr) fd() uintptr {
	var fd uintptr
	if rc, err := s.pipe.SyscallConn(); err == nil {
		_ = rc.Control(func(f uintptr) { fd = f })
	}
	return fd
}
