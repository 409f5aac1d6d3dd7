package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const templatePath = "../../.krew.yaml"

var platforms = []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64", "windows_amd64", "windows_arm64"}

// fakeDist writes stand-in archives for the given platforms and returns the
// folder and each archive's sha256.
func fakeDist(t *testing.T, version string, which ...string) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	sums := map[string]string{}
	for _, p := range which {
		name := "kubectl-podsync_" + version + "_" + p + ".tar.gz"
		data := []byte("archive for " + p)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		sums[p] = hex.EncodeToString(sum[:])
	}
	return dir, sums
}

func TestRenderAllPlatforms(t *testing.T) {
	dist, sums := fakeDist(t, "v1.2.3", platforms...)
	out, err := render(templatePath, dist, "v1.2.3", "", false)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, p := range platforms {
		uri := "uri: https://github.com/kubectl-podsync/kubectl-podsync/releases/download/v1.2.3/kubectl-podsync_v1.2.3_" + p + ".tar.gz\n    sha256: " + sums[p] + "\n"
		if !strings.Contains(s, uri) {
			t.Errorf("want %q in\n%s", uri, s)
		}
	}
	for _, want := range []string{"  version: v1.2.3\n", "store/podsync/v1.2.3/kubectl_complete-podsync", "bin: kubectl-podsync.exe\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("want %q in\n%s", want, s)
		}
	}
	if strings.Contains(s, "{{") {
		t.Errorf("template actions left in the output:\n%s", s)
	}
}

// -partial keeps the built platforms only, and the rest of the manifest as
// the full render has it.
func TestRenderPartial(t *testing.T) {
	dist, sums := fakeDist(t, "v1.2.3", "linux_amd64", "windows_arm64")
	out, err := render(templatePath, dist, "v1.2.3", "http://127.0.0.1:9", true)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if n := strings.Count(s, "- selector:"); n != 2 {
		t.Fatalf("want 2 platforms, got %d:\n%s", n, s)
	}
	for _, p := range []string{"linux_amd64", "windows_arm64"} {
		want := "uri: http://127.0.0.1:9/kubectl-podsync_v1.2.3_" + p + ".tar.gz\n    sha256: " + sums[p] + "\n"
		if !strings.Contains(s, want) {
			t.Errorf("want %q in\n%s", want, s)
		}
	}
	if strings.Contains(s, missing) || strings.Contains(s, "darwin") {
		t.Errorf("platforms without an archive are left in:\n%s", s)
	}
	full, _ := fakeDist(t, "v1.2.3", platforms...)
	fullOut, err := render(templatePath, full, "v1.2.3", "http://127.0.0.1:9", false)
	if err != nil {
		t.Fatal(err)
	}
	head := func(b []byte) []byte {
		h, _, found := bytes.Cut(b, []byte("  platforms:\n"))
		if !found {
			t.Fatalf("no platforms in:\n%s", b)
		}
		return h
	}
	if !bytes.Equal(head(out), head(fullOut)) {
		t.Errorf("partial render changed the manifest before its platforms:\n%s", out)
	}
}

func TestRenderErrors(t *testing.T) {
	some, _ := fakeDist(t, "v1.2.3", "linux_amd64")
	none := t.TempDir()
	cases := []struct {
		name, dist, version string
		partial             bool
		want                string
	}{
		{"version without v", some, "1.2.3", false, "must start with v"},
		{"missing archive", some, "v1.2.3", false, "run make dist first"},
		{"partial with nothing built", none, "v1.2.3", true, "no archive of any platform"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := render(templatePath, c.dist, c.version, "", c.partial)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

func TestCheckCommitted(t *testing.T) {
	dist, _ := fakeDist(t, "v1.2.3", platforms...)
	good, err := render(templatePath, dist, "v1.2.3", "", false)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "podsync.yaml")
	o := options{template: templatePath, dist: dist, version: "v1.2.3", committed: file}
	if err := os.WriteFile(file, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkCommitted(o); err != nil {
		t.Fatalf("fresh manifest rejected: %v", err)
	}
	stale := bytes.Replace(good, []byte("sha256: "), []byte("sha256: 0"), 1)
	if err := os.WriteFile(file, stale, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkCommitted(o); err == nil || !strings.Contains(err.Error(), "run make dist") {
		t.Fatalf("stale manifest: error %v, want one saying to run make dist", err)
	}
}

func TestUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-dist", "x"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "-version is required") {
		t.Fatalf("exit %d, stderr %q; want 2 and a usage message", code, stderr.String())
	}
}
