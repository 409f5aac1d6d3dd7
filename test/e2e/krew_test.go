package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// krewVersion is the version the release archives of this test carry.
const krewVersion = "v0.0.0-krewtest"

// TestKrew builds the release archives as `make dist` does, validates the
// rendered manifest with krew's own validator in full mode (it installs
// every platform), then installs the plugin with the real krew into a
// temporary KREW_ROOT and uses it through krew's link on PATH.
func TestKrew(t *testing.T) {
	root := repoRoot(t)
	tools := os.Getenv("PODSYNC_TOOLS_BIN")
	dist := t.TempDir()
	start := time.Now()
	runIn(t, root, []string{"VERSION=" + krewVersion, "DIST=" + dist}, 20*time.Minute, "hack/dist.sh")
	t.Logf("built the release archives in %s", time.Since(start).Round(time.Second))

	// validate-krew-manifest downloads each platform's uri: serve them on loopback.
	srv := httptest.NewServer(http.FileServer(http.Dir(dist)))
	defer srv.Close()
	manifest := filepath.Join(t.TempDir(), "podsync.yaml")
	rendered := runIn(t, root, nil, 2*time.Minute, "go", "run", "./hack/krew-manifest",
		"-dist", dist, "-version", krewVersion, "-base-url", srv.URL)
	if err := os.WriteFile(manifest, []byte(rendered), 0o644); err != nil {
		t.Fatal(err)
	}
	toolsPath := []string{"PATH=" + tools + string(os.PathListSeparator) + os.Getenv("PATH")}
	out := runIn(t, root, toolsPath, 10*time.Minute, filepath.Join(tools, "validate-krew-manifest"), "-manifest", manifest)
	if !strings.Contains(out, "all 6 spec.platforms installed fine") {
		t.Fatalf("validate-krew-manifest did not install all six platforms:\n%s", out)
	}
	t.Logf("validate-krew-manifest:\n%s", lastLines(out, 8))
	// The committed manifest passes the structural checks too.
	runIn(t, root, toolsPath, time.Minute, filepath.Join(tools, "validate-krew-manifest"), "-skip-install", "-manifest", filepath.Join(root, "plugins", "podsync.yaml"))

	krewRoot := t.TempDir()
	krewEnv := []string{"KREW_ROOT=" + krewRoot, "KUBECONFIG=" + env.kubeconfig, "NO_COLOR=1",
		"PATH=" + filepath.Join(krewRoot, "bin") + string(os.PathListSeparator) + tools + string(os.PathListSeparator) + os.Getenv("PATH")}
	archive := filepath.Join(dist, "kubectl-podsync_"+krewVersion+"_"+runtime.GOOS+"_"+runtime.GOARCH+".tar.gz")
	runIn(t, root, krewEnv, 2*time.Minute, env.kubectl, "krew", "install", "--manifest="+manifest, "--archive="+archive)

	if v := strings.TrimSpace(runIn(t, root, krewEnv, time.Minute, env.kubectl, "podsync", "--version")); v != krewVersion {
		t.Errorf("kubectl podsync --version through krew: %q, want %q", v, krewVersion)
	}
	ns := namespace(t)
	apply(t, ns, podYAML("krew-pod", nil))
	once := runIn(t, root, krewEnv, 2*time.Minute, env.kubectl, "podsync", "-n", ns, "--once")
	if !strings.Contains(once, "krew-pod") || !strings.HasPrefix(once, "EVENT") {
		t.Errorf("kubectl podsync --once through krew printed:\n%s", once)
	}
	list := runIn(t, root, krewEnv, time.Minute, env.kubectl, "plugin", "list")
	if !strings.Contains(list, filepath.Join(krewRoot, "bin", "kubectl-podsync")) || strings.Contains(strings.ToLower(list), "warning") {
		t.Errorf("kubectl plugin list:\n%s", list)
	}
	runIn(t, root, krewEnv, time.Minute, env.kubectl, "krew", "uninstall", "podsync")
	if _, err := os.Lstat(filepath.Join(krewRoot, "bin", "kubectl-podsync")); !os.IsNotExist(err) {
		t.Errorf("kubectl-podsync still linked after krew uninstall (%v)", err)
	}
}

// TestCompletionThroughKubectl asks kubectl's own completion, which runs
// kubectl_complete-podsync from PATH.
func TestCompletionThroughKubectl(t *testing.T) {
	ns := namespace(t)
	apply(t, ns, podYAML("complete-me", nil))
	apply(t, ns, podYAML("complete-too", nil))
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "podsync", "-n", ns, "complete-"}, []string{"complete-me", "complete-too"}},
		{[]string{"__complete", "podsync", "-n", ns, "complete-me", "complete-"}, []string{"complete-too"}},
		{[]string{"__complete", "podsync", "--namespace", ""}, []string{ns, "default", "kube-system"}},
		{[]string{"__complete", "podsync", "-o", "custom"}, []string{"custom-columns", "custom-columns-file"}},
		{[]string{"__complete", "podsync", "--until", "ready,he"}, []string{"ready,healthy"}},
		{[]string{"__complete", "podsync", "--context", ""}, []string{"podsync-admin", "podsync-restricted"}},
	}
	for _, tc := range cases {
		out := kubectl(t, tc.args...)
		got := completions(out)
		for _, w := range tc.want {
			if !got[w] {
				t.Errorf("kubectl %s: missing %q in\n%s", strings.Join(tc.args, " "), w, out)
			}
		}
		if tc.args[len(tc.args)-2] == "complete-me" && got["complete-me"] {
			t.Errorf("a pod already given was offered again:\n%s", out)
		}
	}
}

func completions(out string) map[string]bool {
	got := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if l != "" && !strings.HasPrefix(l, ":") && !strings.HasPrefix(l, "Completion ended") {
			got[l] = true
		}
	}
	return got
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// runIn runs a command in dir with extra environment and returns its output;
// a failure fails the test.
func runIn(t *testing.T, dir string, extraEnv []string, limit time.Duration, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), extraEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
