package checks

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// A user who may not list pods gets exit 1 with the server's reason on one
// line, and no summary: there is no verdict on pods it cannot see.
func TestForbiddenUser(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	for _, format := range []string{"", "json"} {
		t.Run("output "+format, func(t *testing.T) {
			args := []string{"--context", localcluster.RestrictedContext, "-n", ns, "--until", "ready", "--timeout", "2m"}
			if format != "" {
				args = append(args, "-o", format)
			}
			r := check(t, args...)
			if r.Code != 1 {
				t.Fatalf("exit code %d, want 1\n%s", r.Code, r)
			}
			want := fmt.Sprintf(`error: list pods: pods is forbidden: User %q cannot list resource "pods" in API group "" in the namespace %q`+"\n",
				localcluster.RestrictedUser, ns)
			if r.Stderr != want || r.Stdout != "" {
				t.Errorf("want only stderr %q\n%s", want, r)
			}
			wantTook(t, r, time.Minute)
		})
	}
}

// SIGINT and SIGTERM during a check: the summary, then 130 and 143.
func TestSignalsDuringACheck(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, harness.PodYAML("wait", state("never-ready")))
	for _, c := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{{syscall.SIGINT, "SIGINT", 130}, {syscall.SIGTERM, "SIGTERM", 143}} {
		t.Run(c.name, func(t *testing.T) {
			s := env.Start(t, "-n", ns, "wait", "--until", "ready")
			s.WaitLine(`^SYNC\s+wait\s`, time.Minute)
			r := s.Stop(c.sig)
			t.Logf("exit %d after %s", r.Code, r.Took.Round(time.Millisecond))
			wantVerdict(t, r, c.code, "interrupted")
			wantStderr(t, r, "Reason:   interrupted by "+c.name+"\n", "Pods:     1 matched", "Events:   SYNC 1, ")
			if strings.Contains(r.Stderr, "error:") {
				t.Errorf("an interrupted check is no error\n%s", r)
			}
		})
	}
}

// Bad conditions, reasons, durations and flag combinations are usage
// errors: exit 2, one line on stderr, and not one connection to the
// cluster.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	kubeconfig, connections := countingCluster(t)
	cases := map[string]struct {
		args []string
		want string
	}{
		"unknown condition":        {[]string{"--until", "redy"}, `invalid --until condition "redy": want one of ready, running, succeeded, completed, healthy, gone, condition=TYPE[=STATUS]`},
		"condition twice":          {[]string{"--until", "ready,Ready"}, `condition "ready" given twice`},
		"phases that exclude":      {[]string{"--until", "running,succeeded"}, "running and succeeded can never hold at the same time"},
		"gone with another":        {[]string{"--until", "gone,ready"}, "gone cannot be combined with other conditions"},
		"bad condition status":     {[]string{"--until", "condition=Ready=Maybe"}, `STATUS "Maybe" must be True, False or Unknown`},
		"empty until":              {[]string{"--until", ""}, `invalid --until value ""`},
		"bad reason":               {[]string{"--until", "ready", "--fail-on", "Crash Loop"}, `reason "Crash Loop": want a word of letters and digits`},
		"none with reasons":        {[]string{"--until", "ready", "--fail-on", "none,Error"}, "none cannot be combined with reasons"},
		"bad duration":             {[]string{"--until", "ready", "--timeout", "5x"}, `invalid argument "5x" for "--timeout" flag`},
		"negative timeout":         {[]string{"--until", "ready", "--timeout", "-1s"}, "invalid --timeout -1s: must not be negative"},
		"min-pods without until":   {[]string{"--min-pods", "2"}, "--min-pods needs --until"},
		"max-restarts w/o until":   {[]string{"--max-restarts", "1"}, "--max-restarts needs --until"},
		"negative min-pods":        {[]string{"--until", "ready", "--min-pods", "-3"}, `invalid argument "-3" for "--min-pods" flag: "-3" is not a count: must be 0 or more`},
		"min-pods with gone":       {[]string{"--until", "gone", "--min-pods", "1"}, "cannot be used with --until gone"},
		"max-restarts not numeric": {[]string{"--until", "ready", "--max-restarts", "many"}, `invalid argument "many" for "--max-restarts" flag`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r := env.PodsyncEnv(t, time.Minute, []string{"KUBECONFIG=" + kubeconfig}, c.args...)
			if r.Code != 2 {
				t.Fatalf("exit code %d, want 2\n%s", r.Code, r)
			}
			if !strings.HasPrefix(r.Stderr, "error: ") || strings.Count(r.Stderr, "\n") != 1 || !strings.Contains(r.Stderr, c.want) {
				t.Errorf("want one stderr line with %q\n%s", c.want, r)
			}
			if r.Stdout != "" {
				t.Errorf("stdout: %q", r.Stdout)
			}
		})
	}
	if n := connections.Load(); n != 0 {
		t.Errorf("%d connections reached the cluster, want none before a usage error", n)
	}
}

// countingCluster writes a kubeconfig whose server only counts the
// connections made to it.
func countingCluster(t *testing.T) (kubeconfig string, connections *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	connections = &atomic.Int32{}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			connections.Add(1)
			conn.Close()
		}
	}()
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: counting
  cluster: {server: "https://%s", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: t}
contexts:
- name: counting
  context: {cluster: counting, user: u, namespace: default}
current-context: counting
`, ln.Addr())
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, connections
}
