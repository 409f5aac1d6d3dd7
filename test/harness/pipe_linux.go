//go:build linux

package harness

import (
	"os"
	"syscall"
	"unsafe"
)

// pipeBuffered is how many bytes wait unread in a pipe (FIONREAD). It goes
// through SyscallConn, since Fd would switch the pipe to blocking mode
// under the reader.
func pipeBuffered(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int32
	var errno syscall.Errno
	err = rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	})
	if err != nil {
		return 0, err
	}
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
