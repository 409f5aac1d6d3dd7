package cmd

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// countingServer answers nothing useful; it only counts requests, to prove
// that bad input is refused before any call reaches a cluster.
func countingServer(t *testing.T) (kubeconfig string, requests *atomic.Int32) {
	t.Helper()
	requests = &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.Error(w, "not a cluster", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	kubeconfig = writeKubeconfig(t, srv.URL, "ctx", "ctx/shop")
	return kubeconfig, requests
}

// writeKubeconfig writes a kubeconfig with one cluster at server, one
// token user, and a context for each of contexts ("NAME" or
// "NAME/NAMESPACE"); current is the current context.
func writeKubeconfig(t *testing.T, server, current string, contexts ...string) string {
	t.Helper()
	cfg := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: %q}\n"+
		"users:\n- name: u\n  user: {token: secret-token}\ncontexts:\n", server)
	for _, c := range contexts {
		name, ns, _ := strings.Cut(c, "/")
		cfg += fmt.Sprintf("- name: %s\n  context: {cluster: c, user: u, namespace: %q}\n", name, ns)
	}
	cfg += "current-context: " + current + "\n"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func run(t *testing.T, kubeconfig string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	t.Setenv("KUBECONFIG", kubeconfig)
	code = Execute(context.Background(), streams, args)
	return code, out.String(), errOut.String()
}

func TestBadInputIsUsageErrorBeforeAnyRequest(t *testing.T) {
	kubeconfig, requests := countingServer(t)
	cases := map[string][]string{
		"unknown flag":            {"--bogus"},
		"bad selector":            {"-l", "app=(("},
		"bad field selector":      {"--field-selector", "status.phase"},
		"bad output":              {"-o", "yml"},
		"bad jsonpath":            {"-o", "jsonpath={.metadata.name"},
		"bad go-template":         {"-o", "go-template={{.metadata.name"},
		"bad custom-columns":      {"-o", "custom-columns=NAME"},
		"bad template file":       {"-o", "go-template-file=/does/not/exist"},
		"bad duration":            {"--timeout", "5x"},
		"negative timeout":        {"--timeout", "-1s"},
		"negative resync":         {"--resync", "-5s"},
		"zero workers":            {"--workers", "0"},
		"zero max retries":        {"--max-retries", "0"},
		"too many workers":        {"--workers", "1000"},
		"too many retries":        {"--max-retries", "1000"},
		"a resync that spins":     {"--resync", "1ns"},
		"bad sort-by":             {"--sort-by", "{.metadata.name"},
		"not a number":            {"--workers", "many"},
		"bad condition":           {"--until", "redy"},
		"bad condition status":    {"--until", "condition=Ready=Maybe"},
		"bad reason":              {"--until", "ready", "--fail-on", "Crash Loop"},
		"negative min pods":       {"--until", "ready", "--min-pods", "-3"},
		"min pods without until":  {"--min-pods", "2"},
		"bad color":               {"--color", "sometimes"},
		"names with -A":           {"-A", "web-1"},
		"once and watch-only":     {"--once", "--watch-only"},
		"unknown context":         {"--context", "nope"},
		"missing kubeconfig file": {"--kubeconfig", "/does/not/exist"},
		"negative log lines":      {"--log-lines", "-1"},
		"too many log lines":      {"--log-lines", "1001"},
		"negative progress":       {"--progress-interval", "-1s"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := run(t, kubeconfig, args...)
			if code != 2 {
				t.Errorf("exit code %d, want 2 (stderr %q)", code, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") {
				t.Errorf("stderr %q, want one line starting with error:", stderr)
			}
		})
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("bad input made %d requests to the server, want 0", n)
	}
}

func TestVersionAndHelp(t *testing.T) {
	kubeconfig, requests := countingServer(t)
	code, stdout, _ := run(t, kubeconfig, "--version")
	if code != 0 || strings.TrimSpace(stdout) != "v0.0.0-dev" {
		t.Errorf("--version: code %d, stdout %q", code, stdout)
	}
	code, stdout, _ = run(t, kubeconfig, "-h")
	if code != 0 || !strings.Contains(stdout, "kubectl podsync [POD_NAME | TYPE/NAME ...] [-f FILE|DIR|- ...] [flags]") {
		t.Errorf("-h: code %d, usage does not name kubectl podsync:\n%s", code, stdout)
	}
	// No made-up defaults: flags that may be left out
	// show none, and no sentinel reaches the help text.
	for _, bad := range []string{"(default -1)", "(default 1, 0 for gone). (default"} {
		if strings.Contains(stdout, bad) {
			t.Errorf("-h shows %q:\n%s", bad, stdout)
		}
	}
	for _, flag := range []string{"--sort-by", "--show-managed-fields", "--show-kind", "--min-pods", "--max-restarts"} {
		if !strings.Contains(stdout, flag) {
			t.Errorf("-h does not list %s", flag)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("--version/-h made %d requests", n)
	}
}

// A server that cannot be used at start is exit 1, with its reason.
func TestUnusableServerIsExit1(t *testing.T) {
	kubeconfig, requests := countingServer(t)
	code, _, stderr := run(t, kubeconfig, "--once")
	if code != 1 {
		t.Fatalf("exit code %d, want 1 (stderr %q)", code, stderr)
	}
	if !strings.Contains(stderr, "list pods") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("stderr %q, want one line about listing pods", stderr)
	}
	if strings.Contains(stderr, "secret-token") {
		t.Error("the token appeared in the output")
	}
	if requests.Load() == 0 {
		t.Error("no request reached the server")
	}
}
