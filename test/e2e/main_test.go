// Package e2e runs the real kubectl-podsync binary as `kubectl podsync`,
// through the pinned kubectl's plugin discovery, against a local control
// plane (internal/localcluster), and checks what a user would see: stdout,
// stderr, exit codes and timing.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
)

// env is set up once by TestMain and read by every test.
var env struct {
	cluster    *localcluster.Cluster
	kubeconfig string
	kubectl    string // the pinned kubectl
	path       string // PATH with the plugin and the pinned tools first
	pluginDir  string
}

// pluginVersion is stamped into the binary under test, so a test can see it
// reach --version.
const pluginVersion = "v0.0.0-e2e"

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	tools := os.Getenv("PODSYNC_TOOLS_BIN")
	if tools == "" {
		fmt.Fprintln(os.Stderr, "e2e: PODSYNC_TOOLS_BIN is not set (make test sets it from hack/build-tools.sh); skipping the end-to-end suite")
		return 0
	}
	tmp, err := os.MkdirTemp("", "podsync-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if err := setUp(tools, tmp); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: set-up failed:", err)
		if env.cluster != nil {
			_ = env.cluster.Stop()
		}
		return 1
	}
	code := m.Run()
	if err := env.cluster.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: stop cluster:", err)
	}
	return code
}

func setUp(tools, tmp string) error {
	env.pluginDir = filepath.Join(tmp, "bin")
	if err := buildPlugin(env.pluginDir); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := localcluster.Start(ctx, localcluster.Options{BinDir: tools, Dir: filepath.Join(tmp, "cluster"), Nodes: 3, Log: os.Stderr})
	if err != nil {
		return fmt.Errorf("start the local cluster: %w", err)
	}
	fmt.Fprintf(os.Stderr, "e2e: cluster ready in %s at %s\n", time.Since(start).Round(time.Millisecond), c.Server)
	env.cluster = c
	env.kubeconfig = c.Kubeconfig
	env.kubectl = filepath.Join(tools, "kubectl")
	env.path = env.pluginDir + string(os.PathListSeparator) + tools + string(os.PathListSeparator) + os.Getenv("PATH")
	return nil
}

// buildPlugin builds the binary under test, with the race detector, so the
// end-to-end runs also look for data races in the real process.
func buildPlugin(dir string) error {
	for _, prog := range []string{"kubectl-podsync", "kubectl_complete-podsync"} {
		cmd := exec.Command("go", "build", "-race",
			"-ldflags", "-X github.com/kubectl-podsync/kubectl-podsync/pkg/version.Version="+pluginVersion,
			"-o", filepath.Join(dir, prog), "github.com/kubectl-podsync/kubectl-podsync/cmd/"+prog)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build %s: %w", prog, err)
		}
	}
	return nil
}
