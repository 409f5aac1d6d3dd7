package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// The binary is found by kubectl's plugin discovery and reports the version
// stamped at build time.
func TestPluginDiscoveryAndVersion(t *testing.T) {
	r := env.Podsync(t, time.Minute, "--version")
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != harness.PluginVersion {
		t.Fatalf("kubectl podsync --version: want %s\n%s", harness.PluginVersion, r)
	}
	list := env.Kubectl(t, "plugin", "list")
	if !strings.Contains(list, "kubectl-podsync") {
		t.Fatalf("kubectl plugin list does not show the plugin:\n%s", list)
	}
}

// A first look at the stream: SYNC for a listed pod, ADD, UPDATE and GONE
// for one created, changed and deleted while watching.
func TestSmokeStream(t *testing.T) {
	ns := env.Namespace(t)
	env.Apply(t, ns, harness.PodYAML("listed", nil))
	harness.Eventually(t, time.Minute, harness.Text("pod listed to run"), func() bool {
		return strings.Contains(env.Kubectl(t, "get", "pod", "-n", ns, "listed"), "Running")
	})
	s := env.Start(t, "-n", ns)
	s.WaitLine(`^SYNC\s+listed\s+1/1\s+Running`, time.Minute)
	env.Apply(t, ns, harness.PodYAML("later", nil))
	s.WaitLine(`^ADD\s+later\s`, time.Minute)
	s.WaitLine(`^UPDATE\s+later\s+1/1\s+Running\s.*STATUS:\S+→Running`, time.Minute)
	env.Kubectl(t, "delete", "pod", "-n", ns, "later", "--wait=false")
	s.WaitLine(`^GONE\s+later\s`, time.Minute)
	r := s.Stop(syscall.SIGINT)
	if r.Code != 130 {
		t.Errorf("exit code after SIGINT: %d, want 130\n%s", r.Code, r)
	}
	if lines := s.Lines(); !strings.HasPrefix(lines[0], "EVENT ") || strings.Count(r.Stdout, "EVENT ") != 1 {
		t.Errorf("want one header line first:\n%s", r.Stdout)
	}
}
