package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad targets are usage errors found before any request: a TYPE podsync
// does not watch, a manifest that cannot be read or decoded, and targets
// combined with flags that choose pods another way.
func TestBadTargetsAreUsageErrorsBeforeAnyRequest(t *testing.T) {
	kubeconfig, requests := countingServer(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("kind: ["), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.yaml")
	if err := os.WriteFile(other, []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: other}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		args []string
		want string
	}{
		"two slashes":            {[]string{"deploy/web/x"}, "want POD_NAME or TYPE/NAME"},
		"missing file":           {[]string{"-f", filepath.Join(dir, "nope.yaml")}, "no such file"},
		"bad manifest":           {[]string{"-f", bad}, "error"},
		"-R without -f":          {[]string{"-R"}, "-R/--recursive needs -f"},
		"target with -A":         {[]string{"-A", "deploy/web"}, "cannot be used with --all-namespaces"},
		"target with selector":   {[]string{"deploy/web", "-l", "app=web"}, "cannot be used with --selector"},
		"file with field sel":    {[]string{"-f", other, "--field-selector", "status.phase=Running"}, "cannot be used with --selector or --field-selector"},
		"-n against manifest":    {[]string{"-n", "shop", "-f", other}, `the namespace from the provided object "other" does not match the namespace "shop"`},
		"min-pods without until": {[]string{"deploy/web", "--min-pods", "1"}, "--min-pods needs --until"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := run(t, kubeconfig, c.args...)
			if code != 2 || stdout != "" || !strings.HasPrefix(stderr, "error: ") || !strings.Contains(stderr, c.want) ||
				strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one error line with %q", code, stdout, stderr, c.want)
			}
		})
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("bad targets made %d requests to the server, want 0", n)
	}
}

// An empty manifest is never a success: with --until it is a usage error
// naming what was read, before any request.
func TestEmptyManifest(t *testing.T) {
	kubeconfig, requests := countingServer(t)
	manifest := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(manifest, []byte("# kustomize build failed\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, kubeconfig, "-f", manifest, "--until", "healthy")
	want := "error: nothing to judge: -f " + manifest + " held no object\n"
	if code != 2 || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, stdout, stderr, want)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests, want 0", n)
	}
}

// A bad --health-rules file is the user's error, before any request.
func TestBadHealthRules(t *testing.T) {
	kubeconfig, requests := countingServer(t)
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte("- apiVersion: example.com/v1\n  kind: Widget\n  current: status.phase ==\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, kubeconfig, "deploy/web", "--until", "ready", "--health-rules", rules)
	if code != 2 || stdout != "" || !strings.HasPrefix(stderr, "error: ") || !strings.Contains(stderr, rules) || strings.Count(stderr, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one error line naming %s", code, stdout, stderr, rules)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests, want 0", n)
	}
}
