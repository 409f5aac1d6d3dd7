// Command spawn runs one measured client for hack/bench and writes its wall
// time, CPU time and peak RSS to a file, and with -rows what it printed.
//
//	spawn [-rows SKIP] RESULT_FILE PROGRAM [ARG...]
//
// It exists because Linux counts, in the peak RSS of a process that calls
// exec, the peak of the memory it had before the exec. Go starts children
// with vfork, so a child of the bench would inherit the bench's own peak
// (hundreds of MiB once it has loaded 50,000 pods). This program uses only
// the standard library, so what its child inherits is a few MiB, and the
// bench reports that baseline. Stdin and stderr pass through.
//
// Without -rows stdout passes through too. With -rows, the child's stdout
// is a pipe that spawn reads to the end and throws away, counting bytes
// and lines and noting when the first byte after SKIP lines (the header)
// arrived: the time to the first row.
//
// The result is one line: wall ns, CPU ns, peak RSS bytes, exit code,
// first row ns (-1: none, or no -rows), stdout bytes, stdout lines.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	os.Exit(run())
}

// output is what the child printed on stdout.
type output struct {
	firstRow     time.Duration // -1: no row
	bytes, lines int64
}

func run() int {
	fl := flag.NewFlagSet("spawn", flag.ContinueOnError)
	rows := fl.Int("rows", -1, "read stdout through a pipe and time the first byte after this many lines (-1: pass stdout through)")
	if err := fl.Parse(os.Args[1:]); err != nil || fl.NArg() < 2 {
		fmt.Fprintln(os.Stderr, "usage: spawn [-rows SKIP] RESULT_FILE PROGRAM [ARG...]")
		return 2
	}
	args := fl.Args()
	cmd := exec.Command(args[1], args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	var pipe *os.File
	if *rows >= 0 {
		r, w, err := os.Pipe()
		if err != nil {
			fmt.Fprintf(os.Stderr, "spawn: pipe: %v\n", err)
			return 127
		}
		growPipe(w)
		pipe, cmd.Stdout = r, w
	}
	start := time.Now()
	out := output{firstRow: -1}
	err := cmd.Start()
	if err == nil {
		if pipe != nil {
			cmd.Stdout.(*os.File).Close()
			out, err = drain(pipe, *rows, start)
		}
		err = errors.Join(err, cmd.Wait())
	}
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
	line := fmt.Sprintf("%d %d %d %d %d %d %d\n", wall.Nanoseconds(), cpu.Nanoseconds(), ru.Maxrss*1024,
		cmd.ProcessState.ExitCode(), out.firstRow.Nanoseconds(), out.bytes, out.lines)
	if werr := os.WriteFile(args[0], []byte(line), 0o644); werr != nil {
		fmt.Fprintf(os.Stderr, "spawn: write result: %v\n", werr)
		return 127
	}
	if err != nil {
		return 1
	}
	return 0
}

// drain reads r to the end as fast as the child writes, so that the pipe
// never holds the child up more than /dev/null would. The buffer is taken
// after the child started, so that the child does not inherit it.
func drain(r *os.File, skip int, start time.Time) (output, error) {
	defer r.Close()
	out := output{firstRow: -1}
	buf := make([]byte, 1<<20)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if out.firstRow < 0 {
				// The first row starts after the skip-th newline, once a
				// byte of it arrived.
				if i := afterLines(chunk, skip-int(out.lines)); i >= 0 && i < n {
					out.firstRow = time.Since(start)
				}
			}
			out.bytes += int64(n)
			out.lines += int64(bytes.Count(chunk, []byte{'\n'}))
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("read stdout: %w", err)
		}
	}
}

// afterLines is the index just past the k-th newline of b (0 for k <= 0),
// or -1 when b holds fewer than k newlines.
func afterLines(b []byte, k int) int {
	i := 0
	for ; k > 0; k-- {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1
		}
		i += j + 1
	}
	return i
}
