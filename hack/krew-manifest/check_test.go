package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTextRules(t *testing.T) {
	prose := "Watches pods.\n\nAs a CI gate it waits.\n"
	cases := []struct {
		name, short, desc string
		want              []string // a substring of each problem, in order
	}{
		{"fine", "Watch pod changes and gate CI on rollouts", prose, nil},
		{"short at the limit", strings.Repeat("x", 50), prose, nil},
		{"short over the limit", strings.Repeat("x", 51), prose, []string{"shortDescription is 51 characters, at most 50"}},
		{"short counts characters, not bytes", strings.Repeat("é", 50), prose, nil},
		{"short empty", "", prose, []string{"shortDescription is empty"}},
		{"short on two lines", "Watch pods\nand gate CI", prose, []string{"spans several lines"}},
		{"line at 80", "Watch pods", strings.Repeat("x", 80) + "\n", nil},
		{"line over 80", "Watch pods", "ok\n" + strings.Repeat("x", 81) + "\n", []string{"line 2 is 81 columns, at most 80"}},
		{"prompt", "Watch pods", "Run it:\n$ kubectl podsync -A\n", []string{"line 2 is a usage example"}},
		{"indented command", "Watch pods", "Run it:\n  kubectl podsync --until ready\n", []string{"line 2 is a usage example"}},
		{"description empty", "Watch pods", " \n", []string{"description is empty"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var m manifest
			m.Spec.ShortDescription, m.Spec.Description = c.short, c.desc
			got := textProblems(m)
			if len(got) != len(c.want) {
				t.Fatalf("problems %q, want %d saying %q", got, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %q, want one saying %q", got[i], w)
				}
			}
		})
	}
}

// The template in the repository passes, and is read as the bot renders it.
func TestCheckTemplate(t *testing.T) {
	var out bytes.Buffer
	if err := checkFiles([]string{templatePath}, "", &out); err != nil {
		t.Fatalf(".krew.yaml: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "krew.yaml")
	text, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Replace(string(text), "  shortDescription: ", "  shortDescription: A description far too long for the index, ", 1)
	if err := os.WriteFile(bad, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	err = checkFiles([]string{bad}, "", &out)
	if err == nil || !strings.Contains(err.Error(), bad+": spec.shortDescription is") {
		t.Fatalf("error %v, want one naming the file and the short description", err)
	}
}

// tarGz writes a .tar.gz holding the named files.
func tarGz(t *testing.T, path string, names ...string) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, n := range names {
		body := []byte("content of " + n)
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A rendered manifest passes only when each of its archives holds a
// LICENSE; the check names the archives that do not.
func TestCheckLicenseInEveryArchive(t *testing.T) {
	dist := t.TempDir()
	for _, p := range platforms {
		files := []string{"kubectl-podsync", "LICENSE", "README.md"}
		switch p {
		case "darwin_arm64":
			files = []string{"kubectl-podsync", "README.md"}
		case "windows_arm64":
			files = []string{"kubectl-podsync.exe", "docs/LICENSE.txt"}
		}
		tarGz(t, filepath.Join(dist, "kubectl-podsync_v1.2.3_"+p+".tar.gz"), files...)
	}
	rendered, err := render(templatePath, dist, "v1.2.3", "", false)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "podsync.yaml")
	if err := os.WriteFile(file, rendered, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = checkFiles([]string{file}, dist, &out)
	if err == nil || !strings.Contains(err.Error(), "archive kubectl-podsync_v1.2.3_darwin_arm64.tar.gz holds no LICENSE file") {
		t.Fatalf("error %v, want one naming the darwin_arm64 archive", err)
	}
	if n := strings.Count(err.Error(), "holds no LICENSE"); n != 1 {
		t.Errorf("%d archives reported, want only darwin_arm64: %v", n, err)
	}

	tarGz(t, filepath.Join(dist, "kubectl-podsync_v1.2.3_darwin_arm64.tar.gz"), "kubectl-podsync", "LICENSE")
	rendered, err = render(templatePath, dist, "v1.2.3", "", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, rendered, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkFiles([]string{file}, dist, &out); err != nil {
		t.Fatalf("every archive has a LICENSE: %v", err)
	}
	// Without -dist only the text is checked, so a manifest whose archives
	// are elsewhere (a committed one) can be checked too.
	if err := checkFiles([]string{file}, "", &out); err != nil {
		t.Fatalf("text rules only: %v", err)
	}
	if err := checkFiles([]string{file}, t.TempDir(), &out); err == nil || !strings.Contains(err.Error(), "run make dist first") {
		t.Fatalf("archives missing: error %v, want one saying to run make dist", err)
	}
}

func TestCheckUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-check"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "needs the manifests") {
		t.Fatalf("exit %d, stderr %q; want 2 and a usage message", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"-check", templatePath}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, stderr %q; want 0 for .krew.yaml", code, stderr.String())
	}
}
