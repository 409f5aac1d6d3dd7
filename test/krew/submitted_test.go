package krew

import (
	"context"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// submitted is the row of docs/releases.md's table that records what
// plugins/podsync.yaml was built from.
type submitted struct {
	version, commit, goVersion string
}

var releaseRow = regexp.MustCompile("(?m)^\\| (v[0-9][^ |]*) \\| `([0-9a-f]{40})` \\| (go[0-9][^ |]*) \\|$")

func submittedRelease(t *testing.T) submitted {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "releases.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := releaseRow.FindSubmatch(doc)
	if m == nil {
		t.Fatalf("docs/releases.md has no row | vX.Y.Z | `COMMIT` | goX.Y.Z |")
	}
	return submitted{version: string(m[1]), commit: string(m[2]), goVersion: string(m[3])}
}

// plugins/podsync.yaml, the manifest submitted to krew-index by hand, is
// exactly what `make dist` renders for the commit and Go that
// docs/releases.md names: this rebuilds that commit's six archives, checks
// each sha256 in the file, and runs krew's validate-krew-manifest in full
// mode on the file with the rebuilt archives.
func TestSubmittedManifestIsTheNamedCommitsBuild(t *testing.T) {
	rel := submittedRelease(t)
	root := repoRoot(t)
	manifestPath := filepath.Join(root, "plugins", "podsync.yaml")
	data, err := os.ReadFile(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Spec struct {
			Version   string `json:"version"`
			Platforms []struct {
				URI    string `json:"uri"`
				SHA256 string `json:"sha256"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("plugins/podsync.yaml: %v", err)
	}
	if m.Spec.Version != rel.version || len(m.Spec.Platforms) != 6 {
		t.Fatalf("plugins/podsync.yaml: version %q with %d platforms, want %s with 6", m.Spec.Version, len(m.Spec.Platforms), rel.version)
	}

	// The commit's tree, as a clone checked out at it has it.
	src := filepath.Join(env.Tmp, "submitted-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, rel.commit, src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("commit %s of docs/releases.md is not in this repository (git archive: %v)\n%s", rel.commit, err, out)
	}

	dist := filepath.Join(env.Tmp, "submitted-dist")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(src, "hack", "dist.sh"))
	cmd.Dir = src
	// GOTOOLCHAIN: the archives are the same bytes only with the same Go.
	cmd.Env = append(withoutVars(os.Environ(), "VERSION", "PLATFORMS", "DIST", "GOTOOLCHAIN"),
		"VERSION="+rel.version, "DIST="+dist, "GOTOOLCHAIN="+rel.goVersion)
	r := runCmd(cmd)
	t.Logf("hack/dist.sh of %s (%s, %s) for six platforms took %s\n%s", rel.commit, rel.version, rel.goVersion, r.Took.Round(time.Second), r.Stderr)
	if r.Code != 0 {
		t.Fatalf("hack/dist.sh:\n%s", r)
	}

	for _, p := range m.Spec.Platforms {
		name := path.Base(p.URI)
		wantURI := "https://github.com/kubectl-podsync/kubectl-podsync/releases/download/" + rel.version + "/" + name
		if p.URI != wantURI {
			t.Errorf("uri %s, want %s", p.URI, wantURI)
		}
		if got := fileSHA256(t, filepath.Join(dist, name)); got != p.SHA256 {
			t.Errorf("%s: rebuilt sha256 %s, plugins/podsync.yaml says %s", name, got, p.SHA256)
		}
	}

	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	vctx, vcancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer vcancel()
	validate := exec.CommandContext(vctx, goBin, "run", "./hack/krew-manifest", "-validate", "-dist", dist, "-committed", manifestPath)
	validate.Dir = src
	validate.Env = append(os.Environ(), "PATH="+strings.Join([]string{env.Tools, filepath.Dir(goBin)}, string(os.PathListSeparator)))
	r = runCmd(validate)
	t.Logf("validator took %s\n%s", r.Took.Round(time.Millisecond), r)
	if r.Code != 0 || !strings.Contains(r.Stderr, "matches the archives in") || !strings.Contains(r.Stderr, "all 6 spec.platforms installed fine") {
		t.Fatalf("validate-krew-manifest -committed plugins/podsync.yaml: want exit 0, the file matching the rebuilt archives, and 6 platforms installed\n%s", r)
	}
}
