package action

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/internal/ghactions"
	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// releaseVersion is the release the archives are built as, and the ref the
// action is used at (`uses: ...@v0.9.0-action.1`) unless a test says else.
const releaseVersion = "v0.9.0-action.1"

// server serves a folder of releases (BASE/VERSION/FILE) on loopback and
// records the files asked for.
type server struct {
	url  string
	mu   sync.Mutex
	gets []string
}

func serve(t *testing.T, root string) *server {
	t.Helper()
	s := &server{}
	files := http.FileServer(http.Dir(root))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.gets = append(s.gets, r.URL.Path)
		s.mu.Unlock()
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *server) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.gets...)
}

var built struct {
	once sync.Once
	root string // holds releaseVersion/ with the archive and checksums
	err  string
}

// releases builds the linux/amd64 archive of releaseVersion with
// hack/dist.sh, as `make dist` does for every platform, once per package.
func releases(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		root := filepath.Join(env.Tmp, "releases")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(repoRoot(t), "hack", "dist.sh"))
		cmd.Dir = repoRoot(t)
		cmd.Env = append(os.Environ(), "PLATFORMS=linux/amd64", "VERSION="+releaseVersion, "DIST="+filepath.Join(root, releaseVersion))
		start := time.Now()
		out, err := cmd.CombinedOutput()
		t.Logf("hack/dist.sh for linux/amd64 took %s", time.Since(start).Round(time.Millisecond))
		if err != nil {
			built.err = "hack/dist.sh: " + err.Error() + "\n" + string(out)
			return
		}
		built.root = root
	})
	if built.err != "" {
		t.Fatal(built.err)
	}
	return built.root
}

func archiveName() string { return "kubectl-podsync_" + releaseVersion + "_linux_amd64.tar.gz" }

// newRunner is a fresh runner whose PATH has the pinned kubectl and the
// system's tools but no kubectl-podsync: only the action can provide it.
func newRunner(t *testing.T) runner {
	t.Helper()
	dir := t.TempDir()
	r := runner{
		actionRef: releaseVersion,
		temp:      filepath.Join(dir, "temp"),
		toolCache: filepath.Join(dir, "toolcache"),
		path:      env.Tools + string(os.PathListSeparator) + "/usr/local/bin:/usr/bin:/bin",
		env:       []string{"KUBECONFIG=" + env.Kubeconfig, "NO_COLOR=1"},
	}
	for _, d := range []string{r.temp, r.toolCache} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range filepath.SplitList(r.path) {
		if _, err := os.Stat(filepath.Join(d, "kubectl-podsync")); err == nil {
			t.Fatalf("%s already holds a kubectl-podsync: the test could not tell the action's from it", d)
		}
	}
	return r
}

// errors are the ::error commands the runner would make annotations of.
func errorCommands(output string) []ghactions.Command {
	var out []ghactions.Command
	for _, c := range ghactions.Replay(output) {
		if strings.EqualFold(c.Name, "error") {
			out = append(out, c)
		}
	}
	return out
}

// A gate that passes: the action installs the release of its own ref from
// the loopback server, checks its sha256, puts it on PATH and runs kubectl
// podsync with arguments a shell would split (a quoted selector with
// spaces); the exit code 0 is its output. A second job on the same runner
// takes it from the cache without downloading.
func TestActionGatePasses(t *testing.T) {
	srv := serve(t, releases(t))
	ns := env.Namespace(t)
	env.Apply(t, ns, harness.PodYAML("web", nil))
	a := readAction(t)
	r := newRunner(t)

	run := r.run(t, a, map[string]string{
		"base-url": srv.url,
		"args":     "-n " + ns + " -l 'app in (web)' --until ready --timeout 2m",
	})
	t.Logf("job log:\n%s", run.log())
	if run.failed {
		t.Fatalf("the action failed")
	}
	dir := filepath.Join(r.toolCache, "kubectl-podsync", releaseVersion, "linux-amd64")
	want := map[string]string{"version": releaseVersion, "path": filepath.Join(dir, "kubectl-podsync"), "exit-code": "0"}
	for k, v := range want {
		if run.outputs[k] != v {
			t.Errorf("output %s = %q, want %q", k, run.outputs[k], v)
		}
	}
	if len(run.added) != 1 || run.added[0] != dir {
		t.Errorf("added to PATH: %q, want only %s", run.added, dir)
	}
	install := run.step(t, "Install kubectl-podsync")
	if !strings.Contains(install.output, "matches kubectl-podsync_"+releaseVersion+"_checksums.txt") ||
		!strings.Contains(install.output, "kubectl-podsync "+releaseVersion+" is on PATH") {
		t.Errorf("install step does not report the checked sha256 and the version:\n%s", install.output)
	}
	gate := run.step(t, "kubectl podsync")
	if !strings.Contains(gate.output, "Verdict:  met (exit 0)") {
		t.Errorf("the gate's log has no met verdict:\n%s", gate.output)
	}
	if errs := errorCommands(run.log()); len(errs) > 0 {
		t.Errorf("a passing gate made annotations: %+v", errs)
	}
	gets := srv.requests()
	wantGets := []string{"/" + releaseVersion + "/kubectl-podsync_" + releaseVersion + "_checksums.txt", "/" + releaseVersion + "/" + archiveName()}
	if strings.Join(gets, " ") != strings.Join(wantGets, " ") {
		t.Errorf("downloads %q, want %q", gets, wantGets)
	}

	// The same runner again (a self-hosted runner's tool cache, or what
	// actions/cache restored), installing only.
	again := r.run(t, a, map[string]string{"base-url": srv.url})
	t.Logf("second job log:\n%s", again.log())
	if again.failed || !again.step(t, "kubectl podsync").skipped || again.outputs["exit-code"] != "" {
		t.Fatalf("install only: want success and no gate run")
	}
	if out := again.step(t, "Install kubectl-podsync").output; !strings.Contains(out, "from the cache") {
		t.Errorf("second install does not use the cache:\n%s", out)
	}
	if n := len(srv.requests()); n != len(wantGets) {
		t.Errorf("second install downloaded again: %q", srv.requests())
	}
}

// A gate that fails: a pod that cannot pull its image is exit 4, which
// fails the step, is the exit-code output, and shows as annotations:
// podsync's own for the pod and the action's naming the exit code.
func TestActionGateFails(t *testing.T) {
	srv := serve(t, releases(t))
	ns := env.Namespace(t)
	env.Apply(t, ns, harness.PodYAML("pull", map[string]string{localcluster.StateAnnotation: localcluster.StateImagePullBackOff}))
	a := readAction(t)
	r := newRunner(t)

	run := r.run(t, a, map[string]string{
		"base-url": srv.url,
		"args":     "-n " + ns + " -l app=pull --until ready --timeout 2m",
	})
	t.Logf("job log:\n%s", run.log())
	gate := run.step(t, "kubectl podsync")
	if !run.failed || gate.code != 4 || run.outputs["exit-code"] != "4" {
		t.Fatalf("want the gate step failed with exit 4 and exit-code 4, got failed=%v, exit %d, exit-code %q", run.failed, gate.code, run.outputs["exit-code"])
	}
	errs := errorCommands(gate.output)
	var fromPodsync, fromAction bool
	for _, e := range errs {
		fromPodsync = fromPodsync || strings.Contains(e.Properties["title"], "pull")
		fromAction = fromAction || (e.Properties["title"] == "kubectl podsync" && strings.HasPrefix(e.Data, "exit 4: a pod or a target failed"))
	}
	if !fromPodsync || !fromAction {
		t.Errorf("want an annotation of podsync's for pod pull and the action's for exit 4, got %+v", errs)
	}
	if !strings.Contains(run.summary, "pull") {
		t.Errorf("the job summary does not explain pod pull:\n%s", run.summary)
	}
}

// A tampered archive: the checksums file is the release's, the archive is
// not. The install step fails naming the mismatch, nothing is installed or
// put on PATH, and kubectl podsync never runs.
func TestActionTamperedArchive(t *testing.T) {
	good := filepath.Join(releases(t), releaseVersion)
	root := filepath.Join(t.TempDir(), "tampered")
	dir := filepath.Join(root, releaseVersion)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	checksums := "kubectl-podsync_" + releaseVersion + "_checksums.txt"
	for _, f := range []string{checksums, archiveName()} {
		data, err := os.ReadFile(filepath.Join(good, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == archiveName() {
			data[len(data)/2] ^= 0xff
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := serve(t, root)
	a := readAction(t)
	r := newRunner(t)

	run := r.run(t, a, map[string]string{
		"version":  releaseVersion,
		"base-url": srv.url,
		"args":     "--version",
	})
	t.Logf("job log:\n%s", run.log())
	install := run.step(t, "Install kubectl-podsync")
	if !run.failed || install.code == 0 {
		t.Fatalf("want the install step failed")
	}
	errs := errorCommands(install.output)
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Data, "sha256 mismatch: "+archiveName()) {
		t.Errorf("want one annotation saying sha256 mismatch, got %+v", errs)
	}
	if !run.step(t, "kubectl podsync").skipped {
		t.Errorf("kubectl podsync ran after a failed install")
	}
	if len(run.added) != 0 || run.outputs["path"] != "" {
		t.Errorf("a tampered archive reached PATH: %q, path output %q", run.added, run.outputs["path"])
	}
	if entries, _ := os.ReadDir(filepath.Join(r.toolCache, "kubectl-podsync", releaseVersion)); len(entries) != 0 {
		t.Errorf("the tool cache holds %v after a failed install", entries)
	}
}

// Used at a branch, with no version input, the action cannot know which
// release to install and says so before downloading anything.
func TestActionNeedsAVersionAtABranch(t *testing.T) {
	a := readAction(t)
	r := newRunner(t)
	r.actionRef = "main"
	run := r.run(t, a, map[string]string{"base-url": "http://127.0.0.1:9"})
	t.Logf("job log:\n%s", run.log())
	errs := errorCommands(run.step(t, "Resolve the release").output)
	if !run.failed || len(errs) != 1 || !strings.Contains(errs[0].Data, `used at "main", not a release: set the version input`) {
		t.Fatalf("want the resolve step to fail asking for the version input, got %+v", errs)
	}
}
