package krew

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// releaseTag is what git describe gives in the tagged snapshot, so it must
// reach `kubectl podsync --version` of the archive's binary.
const releaseTag = "v0.9.0-krew.1"

// krewEnv runs kubectl the way a krew user has it: KREW_ROOT/bin first on
// PATH, then the pinned kubectl and krew, and git (krew's index needs it).
// The harness's plugin folder is not on PATH, so only krew's link can
// answer `kubectl podsync`.
type krewEnv struct {
	root string
	vars []string
}

func newKrewEnv(t *testing.T) krewEnv {
	t.Helper()
	root := filepath.Join(env.Tmp, "krew-root")
	gitBin := filepath.Join(env.Tmp, "git-bin")
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is needed for krew's index: %v", err)
	}
	if err := os.MkdirAll(gitBin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(gitPath, filepath.Join(gitBin, "git")); err != nil {
		t.Fatal(err)
	}
	path := strings.Join([]string{filepath.Join(root, "bin"), env.Tools, gitBin}, string(os.PathListSeparator))
	return krewEnv{root: root, vars: []string{"PATH=" + path, "KREW_ROOT=" + root, "KREW_NO_UPGRADE_CHECK=1"}}
}

// kubectl runs the pinned kubectl with the krew environment.
func (k krewEnv) kubectl(t *testing.T, args ...string) harness.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := runCmd(env.Command(ctx, k.vars, args...))
	if ctx.Err() != nil {
		t.Fatalf("kubectl %s did not end within 2m\n%s", strings.Join(args, " "), r)
	}
	return r
}

// The release archive, its checksum and manifest, installed by the real
// krew; the installed plugin runs through krew's link and reports the
// version git gave; krew uninstalls it.
func TestKrewInstallRunUninstall(t *testing.T) {
	rel := buildReleaseOnce(t)
	checkArchive(t, rel)
	k := newKrewEnv(t)

	r := k.kubectl(t, "krew", "install", "--manifest="+rel.manifest, "--archive="+rel.archive)
	if r.Code != 0 || !strings.Contains(r.Stderr, "Installed plugin: podsync") {
		t.Fatalf("krew install: want exit 0 and \"Installed plugin: podsync\"\n%s", r)
	}
	if !strings.Contains(r.Stderr, "store/podsync/"+releaseTag+"/kubectl_complete-podsync") {
		t.Errorf("krew install does not show the completion caveat:\n%s", r)
	}
	store := filepath.Join(k.root, "store", "podsync", releaseTag)
	for _, f := range []string{"kubectl-podsync", "kubectl_complete-podsync", "LICENSE", "README.md"} {
		if _, err := os.Stat(filepath.Join(store, f)); err != nil {
			t.Errorf("krew did not install %s: %v", f, err)
		}
	}
	link := filepath.Join(k.root, "bin", "kubectl-podsync")
	if target, err := os.Readlink(link); err != nil || target != filepath.Join(store, "kubectl-podsync") {
		t.Fatalf("krew's link %s -> %q (%v), want the store's binary", link, target, err)
	}

	r = k.kubectl(t, "podsync", "--version")
	if r.Code != 0 || r.Stdout != releaseTag+"\n" || r.Stderr != "" {
		t.Fatalf("kubectl podsync --version through krew's link: want %s on stdout only\n%s", releaseTag, r)
	}
	checkHelp(t, k)
	checkOnce(t, k)
	checkPluginList(t, k, link)
	checkCaveatCompletion(t, k, rel)
	checkUninstall(t, k, store, link)
}

// checkArchive: the archive holds the four files, the checksums file and
// the manifest carry its real sha256, and the manifest lists only it.
func checkArchive(t *testing.T, rel release) {
	t.Helper()
	got := archiveEntries(t, rel.archive)
	want := map[string]fs.FileMode{"kubectl-podsync": 0o755, "kubectl_complete-podsync": 0o755, "LICENSE": 0o644, "README.md": 0o644}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("archive entries %v, want %v", got, want)
	}
	sum := fileSHA256(t, rel.archive)
	checksums, err := os.ReadFile(filepath.Join(rel.dist, "kubectl-podsync_"+releaseTag+"_checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := sum + "  " + filepath.Base(rel.archive) + "\n"; string(checksums) != want {
		t.Errorf("checksums file %q, want %q", checksums, want)
	}
	manifest, err := os.ReadFile(rel.manifest)
	if err != nil {
		t.Fatal(err)
	}
	m := string(manifest)
	for _, want := range []string{"\n  version: " + releaseTag + "\n", "\n    sha256: " + sum + "\n", "/releases/download/" + releaseTag + "/" + filepath.Base(rel.archive) + "\n"} {
		if !strings.Contains(m, want) {
			t.Errorf("manifest lacks %q:\n%s", want, m)
		}
	}
	if n := strings.Count(m, "- selector:"); n != 1 {
		t.Errorf("manifest for one archive lists %d platforms:\n%s", n, m)
	}
}

// checkHelp: the usage names the command as kubectl users type it.
func checkHelp(t *testing.T, k krewEnv) {
	t.Helper()
	r := k.kubectl(t, "podsync", "-h")
	if r.Code != 0 || !strings.Contains(r.Stdout, "Usage:\n  kubectl podsync [POD_NAME | TYPE/NAME ...] [-f FILE|DIR|- ...] [flags]\n") ||
		!strings.Contains(r.Stdout, "help for kubectl podsync") || r.Stderr != "" {
		t.Errorf("kubectl podsync -h: want exit 0 and usage as \"kubectl podsync [POD_NAME | TYPE/NAME ...] [-f FILE|DIR|- ...] [flags]\"\n%s", r)
	}
	if regexp.MustCompile(`(?m)^  podsync `).MatchString(r.Stdout) {
		t.Errorf("help shows the bare command name:\n%s", r.Stdout)
	}
}

// checkOnce: the installed binary reads a real cluster.
func checkOnce(t *testing.T, k krewEnv) {
	t.Helper()
	ns := env.Namespace(t)
	env.Apply(t, ns, harness.PodYAML("krew-pod", nil))
	harness.Eventually(t, 2*time.Minute, harness.Text("pod krew-pod to run"), func() bool {
		return strings.Contains(env.Kubectl(t, "get", "pod", "-n", ns, "krew-pod"), "Running")
	})
	r := k.kubectl(t, "podsync", "--once", "-n", ns)
	lines := strings.Split(strings.TrimRight(r.Stdout, "\n"), "\n")
	if r.Code != 0 || len(lines) != 2 ||
		!regexp.MustCompile(`^EVENT\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+CHANGES$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^SYNC\s+krew-pod\s+1/1\s+Running\s+0\s+\S+\s*$`).MatchString(lines[1]) {
		t.Errorf("kubectl podsync --once through krew's link: want exit 0, the header and one SYNC row\n%s", r)
	}
	if strings.Contains(strings.ToLower(r.Stderr), "error") {
		t.Errorf("kubectl podsync --once wrote an error:\n%s", r)
	}
}

// checkPluginList: kubectl finds krew's link and has nothing to warn about.
func checkPluginList(t *testing.T, k krewEnv, link string) {
	t.Helper()
	r := k.kubectl(t, "plugin", "list")
	if r.Code != 0 || !strings.Contains(r.Stdout, link+"\n") || strings.Contains(r.Stdout, env.PluginDir) {
		t.Errorf("kubectl plugin list: want exit 0 and %s (only krew's)\n%s", link, r)
	}
	if strings.Contains(strings.ToLower(r.Stdout+r.Stderr), "warning") {
		t.Errorf("kubectl plugin list warns:\n%s", r)
	}
}

// checkCaveatCompletion follows the manifest's caveat to put the shipped
// completion program on PATH, then completes a pod name through kubectl.
func checkCaveatCompletion(t *testing.T, k krewEnv, rel release) {
	t.Helper()
	manifest, err := os.ReadFile(rel.manifest)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s+(ln -sf .*kubectl_complete-podsync.*)$`).FindStringSubmatch(string(manifest))
	if m == nil {
		t.Fatalf("no ln -sf command in the manifest's caveats:\n%s", manifest)
	}
	sh := exec.Command("/bin/sh", "-c", m[1])
	sh.Env = []string{"KREW_ROOT=" + k.root, "HOME=" + env.Tmp, "PATH=/usr/bin:/bin"}
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("caveat command %q: %v\n%s", m[1], err, out)
	}
	ns := env.Namespace(t)
	env.Apply(t, ns, harness.PodYAML("caveat-pod", nil))
	r := k.kubectl(t, "__complete", "podsync", "-n", ns, "cav")
	if r.Code != 0 || r.Stdout != "caveat-pod\n:4\n" {
		t.Errorf("pod name completion through the caveat's link: want caveat-pod and directive 4\n%s", r)
	}
}

// checkUninstall: krew removes the plugin and kubectl no longer finds it.
func checkUninstall(t *testing.T, k krewEnv, store, link string) {
	t.Helper()
	// krew uninstall insists on a plugin index; a user has the default one.
	// An empty local index keeps the test off the network.
	index := filepath.Join(env.Tmp, "index.git")
	git(t, env.Tmp, "init", "-q", "--bare", index)
	if r := k.kubectl(t, "krew", "index", "add", "local", index); r.Code != 0 {
		t.Fatalf("krew index add: %s", r)
	}
	r := k.kubectl(t, "krew", "uninstall", "podsync")
	if r.Code != 0 || !strings.Contains(r.Stderr, "Uninstalled plugin: podsync") {
		t.Fatalf("krew uninstall: want exit 0 and \"Uninstalled plugin: podsync\"\n%s", r)
	}
	for _, p := range []string{store, link} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is still there after krew uninstall", p)
		}
	}
	r = k.kubectl(t, "podsync", "--version")
	if r.Code != 1 || !strings.Contains(r.Stderr, `unknown command "podsync" for "kubectl"`) {
		t.Errorf("kubectl podsync after uninstall: want exit 1, unknown command\n%s", r)
	}
}

// The validator of `make validate-krew` (krew's validate-krew-manifest in
// full mode, archives served on loopback) passes for the release.
func TestValidateKrewManifest(t *testing.T) {
	rel := buildReleaseOnce(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "run", "./hack/krew-manifest", "-validate", "-partial", "-dist", rel.dist, "-version", rel.version)
	cmd.Dir = rel.src
	path := strings.Join([]string{env.Tools, filepath.Dir(goBin)}, string(os.PathListSeparator))
	cmd.Env = append(os.Environ(), "PATH="+path)
	r := runCmd(cmd)
	t.Logf("validator took %s\n%s", r.Took.Round(time.Millisecond), r)
	served := "served GET " + filepath.Base(rel.archive) + ": 200"
	if r.Code != 0 || !strings.Contains(r.Stderr, "all 1 spec.platforms installed fine") || !strings.Contains(r.Stderr, served) {
		t.Fatalf("validate-krew-manifest in full mode: want exit 0, %q and %q\n%s", "all 1 spec.platforms installed fine", served, r)
	}
}
