package faults

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Bad input is exit 2 with one line on stderr, before any request: the
// real binary, run through kubectl, against a server that counts the
// requests it receives.
func TestBadInputRefusedBeforeAnyRequest(t *testing.T) {
	srv := newCountingServer(t)
	kubeconfig := writeKubeconfig(t, srv.srv.URL, nil, &clientcmdapi.AuthInfo{Token: "secret-token-4d2f"}, "shop")
	garbage := filepath.Join(t.TempDir(), "garbage")
	if err := os.WriteFile(garbage, []byte("clusters: [unterminated\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		kubeconfig string // "" for the counting server's
		args       []string
	}{
		{"unknown flag", "", []string{"--bogus"}},
		{"bad selector", "", []string{"-l", "app in (web"}},
		{"bad field selector", "", []string{"--field-selector", "status.phase"}},
		{"unknown output format", "", []string{"-o", "yml"}},
		{"bad jsonpath", "", []string{"-o", "jsonpath={.metadata.name"}},
		{"bad go-template", "", []string{"-o", "go-template={{.metadata.name"}},
		{"bad custom-columns", "", []string{"-o", "custom-columns=NAME"}},
		{"missing template file", "", []string{"-o", "go-template-file=/does/not/exist"}},
		{"bad duration", "", []string{"--timeout", "5x"}},
		{"duration without unit", "", []string{"--resync", "10"}},
		{"negative timeout", "", []string{"--timeout=-1s"}},
		{"negative resync", "", []string{"--resync=-5s"}},
		{"bad request timeout", "", []string{"--request-timeout=soon"}},
		{"zero workers", "", []string{"--workers", "0"}},
		{"negative workers", "", []string{"--workers=-1"}},
		{"negative max retries", "", []string{"--max-retries=-2"}},
		{"workers not a number", "", []string{"--workers", "many"}},
		{"bad condition", "", []string{"--until", "redy"}},
		{"empty condition", "", []string{"--until="}},
		{"bad condition status", "", []string{"--until", "condition=Ready=Maybe"}},
		{"bad reason", "", []string{"--until", "ready", "--fail-on", "Crash Loop"}},
		{"negative min pods", "", []string{"--until", "ready", "--min-pods=-3"}},
		{"min pods -1", "", []string{"--until", "ready", "--min-pods=-1"}},
		{"negative max restarts", "", []string{"--until", "ready", "--max-restarts=-1"}},
		{"min pods without until", "", []string{"--min-pods", "2"}},
		{"bad color", "", []string{"--color", "sometimes"}},
		{"bad log level", "", []string{"-v=loud"}},
		{"names with -A", "", []string{"-A", "web-1"}},
		{"once and watch-only", "", []string{"--once", "--watch-only"}},
		{"unknown context", "", []string{"--context", "nope"}},
		{"missing --kubeconfig file", "", []string{"--kubeconfig", "/does/not/exist"}},
		{"KUBECONFIG names no file", "/does/not/exist", []string{"--once"}},
		{"malformed kubeconfig", garbage, []string{"--once"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kc := kubeconfig
			if c.kubeconfig != "" {
				kc = c.kubeconfig
			}
			r := env.PodsyncEnv(t, time.Minute, []string{"KUBECONFIG=" + kc}, c.args...)
			if r.Code != 2 {
				t.Errorf("exit code %d, want 2\n%s", r.Code, r)
			}
			if r.Stdout != "" {
				t.Errorf("stdout %q, want nothing", r.Stdout)
			}
			lines := strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") {
				t.Errorf("stderr %q, want one line starting with error:", r.Stderr)
			}
			if strings.Contains(r.Stderr, "secret-token-4d2f") {
				t.Errorf("the token appears on stderr: %q", r.Stderr)
			}
			t.Logf("%s", strings.TrimSpace(r.Stderr))
		})
	}
	if n := srv.requests.Load(); n != 0 {
		t.Fatalf("bad input made %d requests to the server, want 0", n)
	}
	// The counter works: good input does reach the server (and its 503
	// answer is exit 1).
	r := env.PodsyncEnv(t, time.Minute, []string{"KUBECONFIG=" + kubeconfig}, "--once")
	if r.Code != 1 || srv.requests.Load() == 0 {
		t.Fatalf("good input: exit %d after %d requests, want exit 1 after at least one\n%s", r.Code, srv.requests.Load(), r)
	}
}
