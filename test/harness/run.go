package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/internal/exitcode"
)

// Result is one finished command.
type Result struct {
	Code           int
	Stdout, Stderr string
	// Took is from the start of kubectl to Ended, when the test saw the
	// command end.
	Took  time.Duration
	Ended time.Time
}

func (r Result) String() string {
	return fmt.Sprintf("exit %d after %s\n--- stdout\n%s--- stderr\n%s", r.Code, r.Took.Round(time.Millisecond), r.Stdout, r.Stderr)
}

// Command builds `kubectl ARGS` with the test environment: KUBECONFIG of
// the package's cluster, PATH with the plugin first, NO_COLOR, then
// extraEnv (which wins over all of these).
func (e *Env) Command(ctx context.Context, extraEnv []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, e.KubectlBin, args...)
	cmd.Env = append(os.Environ(), "PATH="+e.Path, "NO_COLOR=1")
	if e.Kubeconfig != "" {
		cmd.Env = append(cmd.Env, "KUBECONFIG="+e.Kubeconfig)
	}
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
	return cmd
}

// Podsync runs `kubectl podsync ARGS` to the end; the test fails if it
// takes longer than limit.
func (e *Env) Podsync(t testing.TB, limit time.Duration, args ...string) Result {
	t.Helper()
	return e.PodsyncEnv(t, limit, nil, args...)
}

// PodsyncEnv is Podsync with extra environment variables.
func (e *Env) PodsyncEnv(t testing.TB, limit time.Duration, extraEnv []string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := e.Command(ctx, extraEnv, append([]string{"podsync"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	ended := time.Now()
	r := Result{Code: ExitCode(err), Stdout: stdout.String(), Stderr: stderr.String(), Took: ended.Sub(start), Ended: ended}
	if ctx.Err() != nil {
		t.Fatalf("kubectl podsync %s did not end within %s\n%s", strings.Join(args, " "), limit, r)
	}
	return r
}

// ExitCode is the exit code of a finished command, 128+N for a process
// killed by signal N, and -1 when it could not run.
func ExitCode(err error) int { return exitcode.Of(err) }

// Kubectl runs the pinned kubectl and fails the test on error.
func (e *Env) Kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := e.KubectlErr(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// KubectlErr runs the pinned kubectl and returns its combined output.
func (e *Env) KubectlErr(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := e.Command(ctx, nil, args...).CombinedOutput()
	return string(out), err
}

// KubectlOut runs the pinned kubectl and returns its stdout only, failing
// the test on error (for output compared cell by cell).
func (e *Env) KubectlOut(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := e.Command(ctx, nil, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// Apply pipes YAML to kubectl apply in namespace ns.
func (e *Env) Apply(t testing.TB, ns, yaml string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := e.Command(ctx, nil, "apply", "-n", ns, "-f", "-")
	cmd.Stdin = strings.NewReader(yaml)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s\n%s", err, out, yaml)
	}
}

var nsCounter struct {
	sync.Mutex
	n int
}

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// Namespace creates a fresh namespace for one test and deletes it after.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	nsCounter.Lock()
	nsCounter.n++
	name := fmt.Sprintf("e2e-%d-%s", nsCounter.n, nonName.ReplaceAllString(strings.ToLower(t.Name()), "-"))
	nsCounter.Unlock()
	if len(name) > 60 {
		name = name[:60]
	}
	name = strings.TrimRight(name, "-")
	e.Kubectl(t, "create", "namespace", name)
	t.Cleanup(func() { _, _ = e.KubectlErr("delete", "namespace", name, "--wait=false") })
	return name
}

// Eventually polls cond every 100ms until it holds or limit passes; what()
// describes what was awaited, evaluated only on failure.
func Eventually(t testing.TB, limit time.Duration, what func() string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Text is a what() for Eventually from a fixed description.
func Text(s string) func() string { return func() string { return s } }

// PodYAML is a one-container pod with label app=NAME and the given
// annotations (localcluster.StateAnnotation picks a broken state).
func PodYAML(name string, annotations map[string]string) string {
	var ann strings.Builder
	if len(annotations) > 0 {
		ann.WriteString("  annotations:\n")
		for k, v := range annotations {
			fmt.Fprintf(&ann, "    %s: %q\n", k, v)
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
