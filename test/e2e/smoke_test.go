package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// The binary is found by kubectl's plugin discovery and reports the version
// stamped at build time.
func TestPluginDiscoveryAndVersion(t *testing.T) {
	r := podsync(t, time.Minute, "--version")
	if r.code != 0 || strings.TrimSpace(r.stdout) != pluginVersion {
		t.Fatalf("kubectl podsync --version: want %s\n%s", pluginVersion, r)
	}
	list := kubectl(t, "plugin", "list")
	if !strings.Contains(list, "kubectl-podsync") {
		t.Fatalf("kubectl plugin list does not show the plugin:\n%s", list)
	}
}

// A first look at the stream: SYNC for a listed pod, ADD, UPDATE and GONE
// for one created, changed and deleted while watching.
func TestSmokeStream(t *testing.T) {
	ns := namespace(t)
	apply(t, ns, podYAML("listed", nil))
	eventually(t, time.Minute, "pod listed to run", func() bool {
		return strings.Contains(kubectl(t, "get", "pod", "-n", ns, "listed"), "Running")
	})
	s := startPodsync(t, "-n", ns)
	s.waitLine(`^SYNC\s+listed\s+1/1\s+Running`, time.Minute)
	apply(t, ns, podYAML("later", nil))
	s.waitLine(`^ADD\s+later\s`, time.Minute)
	s.waitLine(`^UPDATE\s+later\s+1/1\s+Running\s.*STATUS:\S+→Running`, time.Minute)
	kubectl(t, "delete", "pod", "-n", ns, "later", "--wait=false")
	s.waitLine(`^GONE\s+later\s`, time.Minute)
	r := s.stop(syscall.SIGINT)
	if r.code != 130 {
		t.Errorf("exit code after SIGINT: %d, want 130\n%s", r.code, r)
	}
	if lines := s.Lines(); !strings.HasPrefix(lines[0], "EVENT ") || strings.Count(r.stdout, "EVENT ") != 1 {
		t.Errorf("want one header line first:\n%s", r.stdout)
	}
}

func podYAML(name string, annotations map[string]string) string {
	var ann strings.Builder
	if len(annotations) > 0 {
		ann.WriteString("  annotations:\n")
		for k, v := range annotations {
			ann.WriteString("    " + k + ": " + v + "\n")
		}
	}
	return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
  labels:
    app: ` + name + `
` + ann.String() + `spec:
  containers:
  - name: app
    image: registry.example/app:1
`
}
