// Command spawn runs one measured client for hack/bench and writes its wall
// time, CPU time and peak RSS to a file.
//
//	spawn RESULT_FILE PROGRAM [ARG...]
//
// It exists because Linux counts, in the peak RSS of a process that calls
// exec, the peak of the memory it had before the exec. Go starts children
// with vfork, so a child of the bench would inherit the bench's own peak
// (hundreds of MiB once it has loaded 50,000 pods). This program uses only
// the standard library, so what its child inherits is a few MiB, and the
// bench reports that baseline. Stdin, stdout and stderr pass through.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	os.Exit(run())
}

func run() int {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: spawn RESULT_FILE PROGRAM [ARG...]")
		return 2
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if cmd.ProcessState == nil {
		fmt.Fprintf(os.Stderr, "spawn: %v\n", err)
		return 127
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "spawn: no resource usage for the child")
		return 127
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	// ru_maxrss is in KiB on Linux.
	line := fmt.Sprintf("%d %d %d %d\n", wall.Nanoseconds(), cpu.Nanoseconds(), ru.Maxrss*1024, cmd.ProcessState.ExitCode())
	if werr := os.WriteFile(os.Args[1], []byte(line), 0o644); werr != nil {
		fmt.Fprintf(os.Stderr, "spawn: write result: %v\n", werr)
		return 127
	}
	if err != nil {
		return 1
	}
	return 0
}
