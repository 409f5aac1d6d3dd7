//go:build unix

package output

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// pollEvery bounds how long a wait for the reader stays blind to ctx.
const pollEvery = 250 * time.Millisecond

// WatchClosed returns a channel closed once the reader of w has gone (the
// `head` of `kubectl podsync | head -1`), noticed without writing: a pipe
// or socket whose other end is closed polls as an error or a hang-up, as
// GNU tail -f notices it. For anything else (a terminal, a file) it
// returns nil, a channel that never closes.
func WatchClosed(ctx context.Context, w io.Writer) <-chan struct{} {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return nil
	}
	// The number only: f.Fd() would switch the descriptor to blocking mode.
	var fd int32 = -1
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(d uintptr) { fd = int32(d) })
	}
	if fd < 0 {
		return nil
	}
	closed := make(chan struct{})
	go func() {
		fds := []unix.PollFd{{Fd: fd, Events: 0}}
		for ctx.Err() == nil {
			n, err := unix.Poll(fds, int(pollEvery.Milliseconds()))
			if err != nil && !errors.Is(err, unix.EINTR) {
				return // cannot tell; the next write will
			}
			if n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
				close(closed)
				return
			}
		}
	}()
	return closed
}
