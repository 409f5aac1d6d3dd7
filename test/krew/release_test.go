package krew

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// release is one run of hack/dist.sh for linux/amd64.
type release struct {
	src      string // the snapshot it was built from
	version  string
	dist     string
	archive  string
	manifest string
}

var built struct {
	once sync.Once
	rel  release
}

// buildReleaseOnce builds the release of releaseTag for the first test that
// needs it; the others share it.
func buildReleaseOnce(t *testing.T) release {
	t.Helper()
	built.once.Do(func() { built.rel = buildRelease(t, releaseTag) })
	if built.rel.src == "" {
		t.Fatal("the release could not be built (see the first test that needed it)")
	}
	return built.rel
}

// buildRelease copies the work tree into a fresh git repository tagged
// with tag, as a clean clone of a tagged commit would be, and runs
// hack/dist.sh there for linux/amd64 with VERSION unset, so the version
// comes from git describe.
func buildRelease(t *testing.T, tag string) release {
	t.Helper()
	src := filepath.Join(env.Tmp, "src")
	snapshot(t, repoRoot(t), src)
	git(t, src, "init", "-q")
	git(t, src, "add", "-A")
	git(t, src, "commit", "-q", "-m", "snapshot for the krew test")
	git(t, src, "tag", tag)

	dist := filepath.Join(env.Tmp, "dist")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(src, "hack", "dist.sh"))
	cmd.Dir = src
	cmd.Env = append(withoutVars(os.Environ(), "VERSION", "PLATFORMS", "DIST"), "PLATFORMS=linux/amd64", "DIST="+dist)
	r := runCmd(cmd)
	t.Logf("hack/dist.sh for linux/amd64 took %s\n%s", r.Took.Round(time.Millisecond), r.Stderr)
	if r.Code != 0 || lastLine(r.Stdout) != dist {
		t.Fatalf("hack/dist.sh: want exit 0 and the dist folder last on stdout\n%s", r)
	}
	name := "kubectl-podsync_" + tag + "_linux_amd64.tar.gz"
	if !strings.Contains(r.Stderr, "dist: "+name) {
		t.Errorf("hack/dist.sh does not report %s on stderr:\n%s", name, r.Stderr)
	}
	return release{src: src, version: tag, dist: dist, archive: filepath.Join(dist, name), manifest: filepath.Join(dist, "podsync.yaml")}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found at %s: %v", root, err)
	}
	return root
}

// snapshot copies the files git would commit (tracked and untracked, minus
// ignored ones) from root to dst, keeping their modes.
func snapshot(t *testing.T, root, dst string) {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if err := copyFile(filepath.Join(root, rel), filepath.Join(dst, rel)); err != nil {
			t.Fatal(err)
		}
	}
}

func copyFile(from, to string) error {
	info, err := os.Lstat(from)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // deleted in the work tree, so not part of the next commit
	}
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(from)
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		return os.Symlink(target, to)
	}
	if !info.Mode().IsRegular() {
		return nil
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return os.WriteFile(to, data, info.Mode().Perm())
}

// git runs git in dir, isolated from the user's and the system's config.
func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	args = append([]string{"-c", "user.name=krew test", "-c", "user.email=krew-test@example.invalid", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"}, args...)
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func withoutVars(environ []string, names ...string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			drop = drop || name == n
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

func runCmd(cmd *exec.Cmd) harness.Result {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	return harness.Result{Code: harness.ExitCode(err), Stdout: stdout.String(), Stderr: stderr.String(), Took: time.Since(start)}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// archiveEntries lists the names and modes of a .tar.gz.
func archiveEntries(t *testing.T, path string) map[string]fs.FileMode {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(gz)
	entries := map[string]fs.FileMode{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return entries
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		entries[h.Name] = h.FileInfo().Mode()
	}
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
