package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repo makes a git repository holding the files given, all committed, and
// returns its folder.
func repo(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, dir, "init", "-q")
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "files")
	return dir
}

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	args = append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"}, args...)
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// pe is the start of a Windows program: MZ, e_lfanew at 0x3c, then PE\0\0.
func pe() []byte {
	b := make([]byte, 0x80)
	copy(b, "MZ")
	binary.LittleEndian.PutUint32(b[0x3c:], 0x40)
	copy(b[0x40:], "PE\x00\x00")
	return b
}

func TestCheckNamesLargeFilesAndBinaries(t *testing.T) {
	machO := []byte{0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1}
	dir := repo(t, map[string][]byte{
		"main.go":                     []byte("package main\n"),
		"hack/tool/tool":              append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 100)...),
		"bin/mac":                     machO,
		"win.exe":                     pe(),
		"testdata/big.json":           bytes.Repeat([]byte("x"), maxSize+1),
		"testdata/at-limit.txt":       bytes.Repeat([]byte("x"), maxSize),
		"notes/mz.txt":                []byte("MZ is how this note starts, and it is plain text, as long as 64 bytes or longer.\n"),
		"short":                       []byte("MZ"),
		"testdata/fuzz/FuzzX/0123abc": []byte("go test fuzz v1\n[]byte(\"\\x7fELF\")\n"),
	})
	// Neither an untracked binary nor a deleted tracked file is reported.
	if err := os.WriteFile(filepath.Join(dir, "untracked"), []byte("\x7fELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "short")); err != nil {
		t.Fatal(err)
	}

	problems, n, err := check(filepath.Join(dir, "hack"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"bin/mac: an executable binary (Mach-O)",
		"hack/tool/tool: an executable binary (ELF)",
		"testdata/big.json: 1.0 MiB, over the 1 MiB limit",
		"win.exe: an executable binary (PE)",
	}
	if strings.Join(problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
	if n != 8 {
		t.Errorf("%d files checked, want the 8 tracked ones left in the work tree", n)
	}
}

func TestRunExitCodes(t *testing.T) {
	clean := repo(t, map[string][]byte{"main.go": []byte("package main\n")})
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-dir", clean}, &stdout, &stderr); code != 0 {
		t.Fatalf("clean repository: exit %d\n%s", code, stderr.String())
	}
	dirty := repo(t, map[string][]byte{"bench": []byte("\x7fELF\x02")})
	stderr.Reset()
	code := run([]string{"-dir", dirty}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "  bench: an executable binary (ELF)\n") {
		t.Fatalf("exit %d, stderr %q; want 1 naming bench", code, stderr.String())
	}
}

// Every program of the repository, built with go build in its folder or
// from the root, lands on a path .gitignore keeps out of git status.
func TestBuildOutputsAreIgnored(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var outputs []string
	for _, top := range []string{"cmd", "hack"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if bytes.HasPrefix(data, []byte("package main\n")) || bytes.Contains(data, []byte("\npackage main\n")) {
				dir, _ := filepath.Rel(root, filepath.Dir(p))
				name := filepath.Base(dir)
				outputs = append(outputs, filepath.Join(dir, name), name, filepath.Join(dir, name+".exe"))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(outputs) < 3*5 {
		t.Fatalf("found only %v: is the walk right?", outputs)
	}
	for _, o := range outputs {
		cmd := exec.Command("git", "check-ignore", "-q", "--no-index", o)
		cmd.Dir = root
		if err := cmd.Run(); err != nil {
			t.Errorf("%s is not ignored (git check-ignore: %v): add it to .gitignore", o, err)
		}
	}
}
