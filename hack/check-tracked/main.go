// Command check-tracked fails when the repository tracks a file a clone
// should not carry: one over 1 MiB, or an executable binary (ELF, Mach-O or
// PE), such as a program `go build` left beside its source. It names each
// one. `make vet` runs it from the repository root.
//
//	go run ./hack/check-tracked [-dir DIR]
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// maxSize is the largest file a clone should carry: source and test data
// stay far below it.
const maxSize = 1 << 20

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check-tracked", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", ".", "a folder of the git work tree to check")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	problems, n, err := check(*dir)
	if err != nil {
		fmt.Fprintln(stderr, "check-tracked:", err)
		return 1
	}
	if len(problems) > 0 {
		fmt.Fprintln(stderr, "check-tracked: the repository should not track these files (remove them with git rm --cached, and ignore build outputs in .gitignore):")
		for _, p := range problems {
			fmt.Fprintln(stderr, "  "+p)
		}
		return 1
	}
	fmt.Fprintf(stdout, "check-tracked: %d tracked files, none over 1 MiB, no executable binary\n", n)
	return 0
}

// check returns a line per offending file and how many files were looked
// at. It reads the work tree's copy of each tracked file, so a binary that
// replaced a tracked file is caught before it is committed.
func check(dir string) ([]string, int, error) {
	top, err := topLevel(dir)
	if err != nil {
		return nil, 0, err
	}
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = top // the whole repository, whatever folder dir is
	out, err := cmd.Output()
	if err != nil {
		return nil, 0, fmt.Errorf("git ls-files in %s: %w", top, err)
	}
	var problems []string
	n := 0
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		problem, checked, err := checkFile(filepath.Join(top, name))
		if err != nil {
			return nil, 0, err
		}
		if checked {
			n++
		}
		if problem != "" {
			problems = append(problems, name+": "+problem)
		}
	}
	return problems, n, nil
}

func topLevel(dir string) (string, error) {
	cmd := exec.Command("git", "rev-parse", "--show-toplevel")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse in %s: %w", dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// checkFile says what is wrong with one file, if anything. Deleted files,
// symbolic links and submodules are not looked at.
func checkFile(path string) (problem string, checked bool, err error) {
	info, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("stat tracked file: %w", err)
	}
	if !info.Mode().IsRegular() {
		return "", false, nil
	}
	var reasons []string
	if info.Size() > maxSize {
		reasons = append(reasons, fmt.Sprintf("%.1f MiB, over the 1 MiB limit", float64(info.Size())/(1<<20)))
	}
	kind, err := binaryKind(path)
	if err != nil {
		return "", false, err
	}
	if kind != "" {
		reasons = append(reasons, "an executable binary ("+kind+")")
	}
	return strings.Join(reasons, "; "), true, nil
}

// binaryKind names the executable format a file starts with, or returns "".
func binaryKind(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("open tracked file: %w", err)
	}
	defer f.Close()
	head := make([]byte, 0x40)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		return "ELF", nil
	case isMachO(head):
		return "Mach-O", nil
	case bytes.HasPrefix(head, []byte("MZ")) && len(head) == 0x40:
		return peKind(f, head)
	}
	return "", nil
}

func isMachO(head []byte) bool {
	if len(head) < 4 {
		return false
	}
	switch binary.BigEndian.Uint32(head) {
	case 0xfeedface, 0xfeedfacf, 0xcefaedfe, 0xcffaedfe, // 32 and 64 bits, either byte order
		0xcafebabe: // a universal binary (Java class files share it; neither belongs here)
		return true
	}
	return false
}

// peKind confirms an "MZ" header by the "PE\0\0" signature its e_lfanew
// field points at, so a text file that happens to start with MZ passes.
func peKind(f *os.File, head []byte) (string, error) {
	off := int64(binary.LittleEndian.Uint32(head[0x3c:]))
	sig := make([]byte, 4)
	if _, err := f.ReadAt(sig, off); err != nil {
		if errors.Is(err, io.EOF) {
			return "", nil
		}
		return "", fmt.Errorf("read %s: %w", f.Name(), err)
	}
	if string(sig) == "PE\x00\x00" {
		return "PE", nil
	}
	return "", nil
}
