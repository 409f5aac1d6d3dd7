// Package harness is what the end-to-end test packages share: it builds the
// real kubectl-podsync binary, starts a local control plane
// (internal/localcluster), and runs `kubectl podsync` through the pinned
// kubectl's plugin discovery, reading its real stdout, stderr and exit code.
//
// Each test package owns one Env, set up by Main from its TestMain:
//
//	var env *harness.Env
//
//	func TestMain(m *testing.M) { os.Exit(harness.Main(m, harness.Config{}, &env)) }
package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
)

// PluginVersion is stamped into the binary under test, so a test can see it
// reach --version.
const PluginVersion = "v0.0.0-e2e"

const module = "github.com/kubectl-podsync/kubectl-podsync"

// Config shapes the cluster of one test package.
type Config struct {
	// Nodes is the number of kwok nodes (default 3).
	Nodes int
	// APIServerArgs are extra kube-apiserver flags.
	APIServerArgs []string
	// NoCluster builds the plugin and finds the tools but starts no
	// cluster; tests start their own (fault tests kill theirs).
	NoCluster bool
	// Clusters, when 2 or more, starts that many clusters side by side
	// (each with Nodes and APIServerArgs) and a kubeconfig with a context
	// per cluster; see Env.Clusters. 0 or 1 is the single cluster.
	Clusters int
	// NoRace builds the plugin without the race detector: for suites that
	// start it hundreds of times on a small machine (the race-built
	// binary costs several times the CPU per run).
	NoRace bool
}

// Env is one test package's environment.
type Env struct {
	// Tools is the folder of the pinned binaries (kubectl, etcd, kwok, ...).
	Tools string
	// KubectlBin is the pinned kubectl.
	KubectlBin string
	// PluginDir holds kubectl-podsync and kubectl_complete-podsync.
	PluginDir string
	// Path is PATH with PluginDir and Tools first.
	Path string
	// Tmp is a folder removed when the package's tests end.
	Tmp string
	// Cluster and Kubeconfig are nil and "" with Config.NoCluster.
	Cluster    *localcluster.Cluster
	Kubeconfig string
	// With Config.Clusters N >= 2: Clusters are the N clusters, Contexts
	// their admin contexts ("podsync-1" ... "podsync-N", so that
	// `--context 'podsync-*'` selects them all), and MultiKubeconfig the
	// merged kubeconfig holding them (localcluster.WriteMergedKubeconfig;
	// other users' contexts are localcluster.UserContext(NAME, ...)).
	// Cluster is then Clusters[0] and Kubeconfig is MultiKubeconfig, whose
	// current context is Clusters[0]'s admin, so the single-cluster helpers
	// act on the first cluster.
	Clusters        []*localcluster.Cluster
	Contexts        []string
	MultiKubeconfig string
}

// Main sets up *env, runs the tests and tears down; it returns the exit
// code for os.Exit. Without PODSYNC_TOOLS_BIN (make test sets it from
// hack/build-tools.sh) the package fails rather than pass without testing
// anything; `make unit` runs the tests that need no cluster.
func Main(m *testing.M, cfg Config, env **Env) int {
	tools := os.Getenv("PODSYNC_TOOLS_BIN")
	if tools == "" {
		fmt.Fprintln(os.Stderr, "e2e: PODSYNC_TOOLS_BIN is not set: run `make test`, or set it with PODSYNC_TOOLS_BIN=$(hack/build-tools.sh); `make unit` runs only the tests that need no cluster")
		return 1
	}
	tmp, err := os.MkdirTemp("", "podsync-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	e, err := setUp(cfg, tools, tmp)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: set-up failed:", err)
		return 1
	}
	*env = e
	code := m.Run()
	clusters := e.Clusters
	if clusters == nil && e.Cluster != nil {
		clusters = []*localcluster.Cluster{e.Cluster}
	}
	if err := localcluster.StopAll(clusters); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: stop cluster:", err)
	}
	return code
}

func setUp(cfg Config, tools, tmp string) (*Env, error) {
	tools, err := filepath.Abs(tools)
	if err != nil {
		return nil, fmt.Errorf("tools folder: %w", err)
	}
	e := &Env{Tools: tools, KubectlBin: filepath.Join(tools, "kubectl"), PluginDir: filepath.Join(tmp, "bin"), Tmp: tmp}
	e.Path = e.PluginDir + string(os.PathListSeparator) + tools + string(os.PathListSeparator) + os.Getenv("PATH")
	if err := BuildPlugin(e.PluginDir, !cfg.NoRace); err != nil {
		return nil, err
	}
	if cfg.NoCluster {
		return e, nil
	}
	if cfg.Clusters >= 2 {
		return e, e.startClusters(filepath.Join(tmp, "clusters"), cfg)
	}
	c, err := e.StartCluster(context.Background(), filepath.Join(tmp, "cluster"), cfg)
	if err != nil {
		return nil, err
	}
	e.Cluster, e.Kubeconfig = c, c.Kubeconfig
	return e, nil
}

// StartCluster starts a local cluster in dir with the pinned tools. The
// caller stops it.
func (e *Env) StartCluster(ctx context.Context, dir string, cfg Config) (*localcluster.Cluster, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	start := time.Now()
	nodes := cfg.Nodes
	if nodes == 0 {
		nodes = 3
	}
	c, err := localcluster.Start(ctx, localcluster.Options{
		BinDir: e.Tools, Dir: dir, Nodes: nodes, APIServerArgs: cfg.APIServerArgs, Log: os.Stderr,
	})
	if err != nil {
		return nil, fmt.Errorf("start the local cluster: %w", err)
	}
	fmt.Fprintf(os.Stderr, "e2e: cluster ready in %s at %s\n", time.Since(start).Round(time.Millisecond), c.Server)
	return c, nil
}

// startClusters starts cfg.Clusters clusters in dir and writes their
// merged kubeconfig there.
func (e *Env) startClusters(dir string, cfg Config) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	for i := range cfg.Clusters {
		e.Contexts = append(e.Contexts, fmt.Sprintf("podsync-%d", i+1))
	}
	cs, err := localcluster.StartMany(ctx, localcluster.Options{
		BinDir: e.Tools, Dir: dir, Nodes: cfg.Nodes, APIServerArgs: cfg.APIServerArgs, Log: os.Stderr,
	}, e.Contexts)
	if err != nil {
		return fmt.Errorf("start %d local clusters: %w", cfg.Clusters, err)
	}
	byName := map[string]*localcluster.Cluster{}
	for i, c := range cs {
		byName[e.Contexts[i]] = c
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := localcluster.WriteMergedKubeconfig(kubeconfig, byName); err != nil {
		return errors.Join(err, localcluster.StopAll(cs))
	}
	e.Clusters, e.MultiKubeconfig = cs, kubeconfig
	e.Cluster, e.Kubeconfig = cs[0], kubeconfig
	fmt.Fprintf(os.Stderr, "e2e: %d clusters ready in %s\n", len(cs), time.Since(start).Round(time.Millisecond))
	return nil
}

// BuildPlugin builds kubectl-podsync and kubectl_complete-podsync into dir,
// stamped with PluginVersion; with race, the end-to-end runs also look for
// data races in the real process.
func BuildPlugin(dir string, race bool) error {
	for _, prog := range []string{"kubectl-podsync", "kubectl_complete-podsync"} {
		args := []string{"build"}
		if race {
			args = append(args, "-race")
		}
		args = append(args, "-ldflags", "-X "+module+"/pkg/version.Version="+PluginVersion,
			"-o", filepath.Join(dir, prog), module+"/cmd/"+prog)
		cmd := exec.Command("go", args...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build %s: %w", prog, err)
		}
	}
	return nil
}
