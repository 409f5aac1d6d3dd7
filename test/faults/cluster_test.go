package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// testCluster is a cluster with an Env whose kubectl and podsync commands
// use it, and an admin clientset for changes made from the test.
type testCluster struct {
	*harness.Env
	cs kubernetes.Interface
}

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// newCluster starts a cluster for this test alone and stops it when the
// test ends; on failure the end of the API server's log is shown.
func newCluster(t *testing.T, apiServerArgs ...string) *testCluster {
	t.Helper()
	dir := filepath.Join(env.Tmp, "clusters", nonName.ReplaceAllString(strings.ToLower(t.Name()), "-"))
	tc, err := startCluster(dir, apiServerArgs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("end of %s:\n%s", localcluster.APIServer, logTail(filepath.Join(dir, "logs", localcluster.APIServer+".log"), 20))
		}
		if err := tc.Cluster.Stop(); err != nil {
			t.Errorf("stop the cluster: %v", err)
		}
	})
	return tc
}

func startCluster(dir string, apiServerArgs []string) (*testCluster, error) {
	c, err := env.StartCluster(context.Background(), dir, harness.Config{APIServerArgs: apiServerArgs})
	if err != nil {
		return nil, err
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		_ = c.Stop()
		return nil, err
	}
	cs, err := adminClient(cfg)
	if err != nil {
		_ = c.Stop()
		return nil, err
	}
	e := *env
	e.Cluster, e.Kubeconfig = c, c.Kubeconfig
	return &testCluster{Env: &e, cs: cs}, nil
}

func adminClient(cfg *rest.Config) (kubernetes.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 2000, 4000
	// Protobuf costs the API server less than JSON: the burst is bound by it.
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("admin client: %w", err)
	}
	return cs, nil
}

// The shared cluster serves the tests that leave it healthy (refusals,
// signals, pipes, the burst, watch expiry). Its API server ends watches
// that do not ask for a timeout after 5-10 s; only the expiry test's
// proxy sends such watches.
var shared struct {
	mu  sync.Mutex
	dir string
	tc  *testCluster
	err error
}

func sharedCluster(t *testing.T) *testCluster {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.tc == nil && shared.err == nil {
		shared.dir, shared.err = os.MkdirTemp("", "podsync-faults-shared-")
		if shared.err == nil {
			shared.tc, shared.err = startCluster(shared.dir, []string{"--min-request-timeout=5"})
		}
	}
	if shared.err != nil {
		t.Fatalf("shared cluster: %v", shared.err)
	}
	return shared.tc
}

func stopShared() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	var err error
	if shared.tc != nil {
		err = shared.tc.Cluster.Stop()
	}
	if shared.dir != "" {
		err = errors.Join(err, os.RemoveAll(shared.dir))
	}
	return err
}

func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// holdGate keeps a pod Pending with no node: nothing but the test changes
// it, so every message it gets is one the test caused.
const holdGate = "podsync.test/hold"

// counterKey is the label a test bumps on each change of a pod; as a
// label it can be shown as a table column (-L count).
const counterKey = "count"

// newPod is a one-container pod whose counter is 0; held pods are never
// scheduled.
func newPod(name string, held bool, labels map[string]string) *corev1.Pod {
	all := map[string]string{counterKey: "0"}
	for k, v := range labels {
		all[k] = v
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: all},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	if held {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: holdGate}}
	}
	return p
}

func createPod(t testing.TB, cs kubernetes.Interface, ns string, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s/%s: %v", ns, p.Name, err)
	}
	return out
}

// setCounter sets the pod's counter label and returns its new
// resourceVersion.
func setCounter(ctx context.Context, cs kubernetes.Interface, ns, name string, n int) (string, error) {
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"%d"}}}`, counterKey, n)
	p, err := cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return "", fmt.Errorf("set counter of %s/%s to %d: %w", ns, name, n, err)
	}
	return p.ResourceVersion, nil
}

// connectionNotes counts podsync's own lines about the connection.
func connectionNotes(stderr string) (lost, back int) {
	for _, l := range strings.Split(stderr, "\n") {
		switch {
		case strings.HasPrefix(l, "podsync: lost the connection to the API server"):
			lost++
		case strings.HasPrefix(l, "podsync: reconnected to the API server"):
			back++
		}
	}
	return lost, back
}

// linesOtherThan returns the stderr lines that are neither connection notes
// nor part of the summary.
func linesOtherThan(stderr string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(stderr, "\n"), "\n") {
		switch {
		case l == "",
			strings.HasPrefix(l, "podsync: lost the connection to the API server"),
			strings.HasPrefix(l, "podsync: reconnected to the API server"),
			strings.HasPrefix(l, "podsync: still no connection to the API server"),
			summaryLine.MatchString(l):
			continue
		}
		out = append(out, l)
	}
	return out
}

// summaryLine matches the lines of the text summary and the JSON one
// (with -o json).
var summaryLine = regexp.MustCompile(`^((Verdict|Reason|Pods|Events):\s|\{"verdict":)`)

// alive fails the test if the stream has ended.
func alive(t testing.TB, s *harness.Stream) {
	t.Helper()
	if s.Exited() {
		t.Fatalf("kubectl podsync exited while it should still be watching; %s", s.Dump())
	}
}
