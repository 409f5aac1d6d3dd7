package main

import (
	"os"
	"syscall"
)

// fSetPipeSize is F_SETPIPE_SZ, which package syscall does not name.
const fSetPipeSize = 1031

// growPipe makes the pipe hold 1 MiB instead of 64 KiB, so that a client
// printing fast wakes spawn, and waits for it, sixteen times less often.
// Without it (an unprivileged user above pipe-max-size) the pipe stays as
// it is.
func growPipe(f *os.File) {
	_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), fSetPipeSize, 1<<20)
}
