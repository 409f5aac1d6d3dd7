package contexts

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// brokenKubeconfig is the test kubeconfig with podsync-3's cluster
// trusting a CA file that does not exist.
func brokenKubeconfig(t *testing.T) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Clusters[cfg.Contexts["podsync-3"].Cluster]
	c.CertificateAuthorityData = nil
	c.CertificateAuthority = filepath.Join(t.TempDir(), "missing-ca.crt")
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// One context's kubeconfig entry cannot be loaded (a missing CA file): the
// context is unusable, as kubectl finds it (exit 1 naming it), and
// --skip-unavailable goes on without it, for pods and targets alike; a
// check counts it as failed.
func TestBrokenKubeconfigEntry(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	readyPodEverywhere(t, ns, "web")
	kubeconfig := []string{"KUBECONFIG=" + brokenKubeconfig(t)}
	missing := `context podsync-3: kubeconfig: .*missing-ca\.crt.*`

	for name, args := range map[string][]string{"pods": {"-l", "app=web"}, "TYPE/NAME": {"pod/web"}} {
		t.Run(name, func(t *testing.T) {
			r := env.PodsyncEnv(t, time.Minute, kubeconfig, append([]string{"--context", all, "-n", ns, "--once"}, args...)...)
			wantExit(t, r, 1)
			if !regexp.MustCompile(`^error: ` + missing + `\n$`).MatchString(r.Stderr) {
				t.Errorf("stderr %q, want one line naming podsync-3", r.Stderr)
			}

			r = env.PodsyncEnv(t, time.Minute, kubeconfig, append([]string{"--context", all, "-n", ns, "--once", "--skip-unavailable"}, args...)...)
			wantExit(t, r, 0)
			wantLines(t, r.Stdout, `^SYNC\s+podsync-[12]\s+web\s+1/1\s+Running\s`, 2)
			if !regexp.MustCompile(`(?m)^warning: ` + strings.Replace(missing, "context podsync-3: ", `context podsync-3: unavailable, going on without it \(--skip-unavailable\): `, 1) + `$`).MatchString(r.Stderr) {
				t.Errorf("stderr %q, want the skip said once, naming podsync-3", r.Stderr)
			}

			r = env.PodsyncEnv(t, time.Minute, kubeconfig, append([]string{"--context", all, "-n", ns, "--until", "ready", "--timeout", "30s", "--skip-unavailable"}, args...)...)
			wantExit(t, r, 4)
			wantStderr(t, r, "Verdict:  failed (exit 4)", "Reason:   context podsync-3: unavailable: kubeconfig: ", "podsync-3  failed  0 pods  unavailable: kubeconfig: ")
		})
	}
}

// podsync-3's API server is down at start and the run is about targets
// (TYPE/NAME, -f): exit 1 naming the context; with --skip-unavailable the
// run goes on with the other two and a check counts podsync-3 as failed.
func TestTargetsWithOneContextDown(t *testing.T) {
	ns := namespace(t)
	for _, c := range clusters(t) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := c.cs.AppsV1().Deployments(ns).Create(ctx, deployment("web", "registry.example/web:1", 1), metav1.CreateOptions{})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	manifest := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(manifest, []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	killAPIServer(t, 2)
	named := regexp.MustCompile(`(?m)^error: context podsync-3: .*connection refused$`)
	skipped := regexp.MustCompile(`(?m)^warning: context podsync-3: unavailable, going on without it \(--skip-unavailable\): .*connection refused$`)
	for name, target := range map[string][]string{"TYPE/NAME": {"deploy/web"}, "-f": {"-f", manifest}} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"--context", all, "-n", ns, "--until", "healthy", "--timeout", "60s"}, target...)
			r := env.Podsync(t, 2*time.Minute, args...)
			wantExit(t, r, 1)
			if !named.MatchString(r.Stderr) {
				t.Errorf("stderr does not name podsync-3 in one error line\n%s", r)
			}
			r = env.Podsync(t, 2*time.Minute, append(args, "--skip-unavailable")...)
			wantExit(t, r, 4)
			if n := len(skipped.FindAllString(r.Stderr, -1)); n != 1 {
				t.Errorf("the skip said %d times, want once\n%s", n, r)
			}
			wantStderr(t, r, "Verdict:  failed (exit 4)", "Reason:   context podsync-3: unavailable: ")
		})
	}
}
