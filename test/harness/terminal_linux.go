//go:build linux

package harness

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"unsafe"
)

// RunOnTerminal runs cmd with its stdout on a new pseudo-terminal and
// returns what it wrote there.
func RunOnTerminal(t testing.TB, cmd *exec.Cmd) string {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer master.Close()
	var unlock int32
	var n uint32
	if err := ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	if err := ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		t.Fatalf("pty number: %v", err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = slave, &stderr
	if err := cmd.Start(); err != nil {
		slave.Close()
		t.Fatal(err)
	}
	slave.Close()
	var out bytes.Buffer
	_, err = io.Copy(&out, master)
	// The terminal reports EIO once the last writer is gone.
	if err != nil && !errors.Is(err, syscall.EIO) {
		t.Fatalf("read the terminal: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v on a terminal: %v\n%s", cmd.Args, err, stderr.String())
	}
	return out.String()
}

func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, uintptr(arg)); errno != 0 {
		return errno
	}
	return nil
}
