//go:build unix

package localcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// toolsBin returns the folder of the pinned binaries; without it the test
// fails rather than pass untested (`make unit` leaves this package out).
func toolsBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("PODSYNC_TOOLS_BIN")
	if bin == "" {
		t.Fatal("PODSYNC_TOOLS_BIN is not set; `make test` sets it, or run: PODSYNC_TOOLS_BIN=$(hack/build-tools.sh) go test ./internal/localcluster")
	}
	return bin
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// kubectl runs the pinned kubectl against the cluster with the given stdin.
func kubectl(ctx context.Context, bin, kubeconfig, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func TestCluster(t *testing.T) {
	bin := toolsBin(t)
	began := time.Now()
	c, err := Start(t.Context(), Options{BinDir: bin, Dir: t.TempDir(), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("warm start took %s", time.Since(began).Round(100*time.Millisecond))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = c.Stop()
		}
	})
	pids := c.PIDs()
	if len(pids) != 5 {
		t.Fatalf("PIDs() = %v, want 5 components", pids)
	}
	k := func(t *testing.T, stdin string, args ...string) string {
		t.Helper()
		out, err := kubectl(t.Context(), bin, c.Kubeconfig, stdin, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	t.Run("group", func(t *testing.T) {
		t.Run("deployment", func(t *testing.T) { t.Parallel(); testDeployment(t, k) })
		t.Run("job", func(t *testing.T) { t.Parallel(); testJob(t, k) })
		for _, s := range stateCases() {
			t.Run("state="+s.state, func(t *testing.T) { t.Parallel(); testState(t, k, s) })
		}
		t.Run("restricted", func(t *testing.T) { t.Parallel(); testRestricted(t, c, bin) })
		t.Run("logs", func(t *testing.T) { t.Parallel(); testLogs(t, c, bin, k) })
		t.Run("crash logs", func(t *testing.T) { t.Parallel(); testCrashLoopLogs(t, c, bin, k) })
	})
	t.Run("restart", func(t *testing.T) { testRestart(t, c, bin, k) })

	pids = c.PIDs()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	for name, pid := range c.PIDs() {
		t.Errorf("after Stop, %s (pid %d) still runs", name, pid)
	}
	for name, pid := range pids {
		if isProcess(pid, 0) {
			t.Errorf("after Stop, process %d (%s at start) still runs", pid, name)
		}
	}
	if _, err := Attach(c.Dir); err == nil {
		t.Error("Attach after Stop found a state file")
	}
}

type kubectlFunc func(t *testing.T, stdin string, args ...string) string

func testDeployment(t *testing.T, k kubectlFunc) {
	k(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
`, "apply", "-f", "-")
	k(t, "", "rollout", "status", "deployment/web", "--timeout=90s")
	k(t, "", "wait", "--for=condition=Ready", "pod", "-l", "app=web", "--timeout=60s")
	out := k(t, "", "get", "pods", "-l", "app=web", "--no-headers")
	t.Logf("kubectl get pods -l app=web:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 pods, got:\n%s", out)
	}
	for _, l := range lines {
		if f := strings.Fields(l); f[1] != "1/1" || f[2] != "Running" {
			t.Errorf("pod not 1/1 Running: %s", l)
		}
	}
}

func testJob(t *testing.T, k kubectlFunc) {
	k(t, "", "create", "job", "once", "--image=busybox:1.36", "--", "true")
	k(t, "", "wait", "--for=condition=Complete", "job/once", "--timeout=60s")
	out := k(t, "", "get", "pods", "-l", "job-name=once", "--no-headers")
	if f := strings.Fields(out); len(f) < 3 || f[2] != "Completed" {
		t.Errorf("job pod not Completed:\n%s", out)
	}
}

type stateCase struct {
	state, status, ready string
	initContainer        bool
	restartPolicy        string
}

func stateCases() []stateCase {
	return []stateCase{
		{state: StateCrashLoop, status: "CrashLoopBackOff", ready: "0/1"},
		{state: StateImagePullBackOff, status: "ImagePullBackOff", ready: "0/1"},
		{state: StateInitRunning, status: "Init:0/1", ready: "0/1", initContainer: true},
		{state: StateNeverReady, status: "Running", ready: "0/1"},
		{state: StateError, status: "Error", ready: "0/1", restartPolicy: "Never"},
		{state: StateWaiting, status: "Waiting", ready: "0/1"},
	}
}

func testState(t *testing.T, k kubectlFunc, s stateCase) {
	name := "state-" + s.state
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
  annotations: {%s: %s}
spec:
  restartPolicy: %s
  containers: [{name: app, image: "busybox:1.36"}]
`, name, StateAnnotation, s.state, orDefault(s.restartPolicy, "Always"))
	if s.initContainer {
		manifest += `  initContainers: [{name: setup, image: "busybox:1.36"}]` + "\n"
	}
	k(t, manifest, "apply", "-f", "-")
	row := waitRow(t, k, name, func(f []string) bool { return f[2] == s.status })
	t.Logf("kubectl get pods:\n%s", row)
	if f := rowFields(row); f[1] != s.ready {
		t.Errorf("READY = %s, want %s: %s", f[1], s.ready, row)
	}
	switch s.state {
	case StateCrashLoop:
		first := restarts(t, row)
		row = waitRow(t, k, name, func(f []string) bool { return f[2] == s.status && restarts(t, strings.Join(f, " ")) > first })
		t.Logf("later:\n%s", row)
		last := k(t, "", "get", "pod", name, "-o", "jsonpath={.status.containerStatuses[0].lastState.terminated.exitCode}")
		if last != "1" {
			t.Errorf("lastState.terminated.exitCode = %q, want 1", last)
		}
	case StateError:
		if phase := k(t, "", "get", "pod", name, "-o", "jsonpath={.status.phase}"); phase != "Failed" {
			t.Errorf("phase = %s, want Failed", phase)
		}
	case StateImagePullBackOff:
		if phase := k(t, "", "get", "pod", name, "-o", "jsonpath={.status.phase}"); phase != "Pending" {
			t.Errorf("phase = %s, want Pending", phase)
		}
	case StateNeverReady:
		time.Sleep(3 * time.Second)
		cond := k(t, "", "get", "pod", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if cond != "False" {
			t.Errorf("Ready condition = %q after 3 s, want False", cond)
		}
	}
}

// waitRow polls `kubectl get pod NAME --no-headers` until ok accepts its
// fields (NAME READY STATUS RESTARTS ...) and returns the row with header.
func waitRow(t *testing.T, k kubectlFunc, name string, ok func([]string) bool) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var row string
	for time.Now().Before(deadline) {
		row = k(t, "", "get", "pod", name)
		if f := rowFields(row); len(f) >= 4 && ok(f) {
			return row
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("pod %s did not reach the wanted state; last:\n%s", name, row)
	return ""
}

// rowFields splits the last line of kubectl's table output.
func rowFields(out string) []string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.Fields(lines[len(lines)-1])
}

func restarts(t *testing.T, row string) int {
	t.Helper()
	n, err := strconv.Atoi(rowFields(row)[3])
	if err != nil {
		t.Fatalf("RESTARTS not a number in %q", row)
	}
	return n
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func testRestricted(t *testing.T, c *Cluster, bin string) {
	out, err := kubectl(t.Context(), bin, c.Kubeconfig, "", "--context", RestrictedContext, "get", "pods")
	if err == nil || !strings.Contains(out, "Forbidden") {
		t.Errorf("restricted user: want Forbidden, got %v:\n%s", err, out)
	}
	kc := filepath.Join(t.TempDir(), "alice.kubeconfig")
	if err := c.WriteUserKubeconfig(kc, "alice", "testers"); err != nil {
		t.Fatal(err)
	}
	out, err = kubectl(t.Context(), bin, kc, "", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
	if err != nil || !strings.HasPrefix(out, "alice ") || !strings.Contains(out, "testers") {
		t.Errorf("whoami as alice: %v: %s", err, out)
	}
	out, err = kubectl(t.Context(), bin, kc, "", "get", "pods")
	if err == nil || !strings.Contains(out, `User "alice" cannot list resource "pods"`) {
		t.Errorf("alice: want Forbidden, got %v:\n%s", err, out)
	}
}

func testRestart(t *testing.T, c *Cluster, bin string, k kubectlFunc) {
	before := c.PIDs()[APIServer]
	if err := c.Kill(APIServer); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.PIDs()[APIServer]; ok {
		t.Fatal("API server still listed after Kill")
	}
	if err := c.Restart(APIServer); err != nil {
		t.Fatal(err)
	}
	if after := c.PIDs()[APIServer]; after == 0 || after == before {
		t.Fatalf("API server pid %d after restart, was %d", after, before)
	}
	k(t, "", "get", "nodes")

	// After an etcd crash the API server reconnects by itself.
	if err := c.Kill(Etcd); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(Etcd); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		_, err := kubectl(t.Context(), bin, c.Kubeconfig, "", "get", "nodes")
		return err
	})

	kc, err := c.StartAPIServer(t.Context(), "kube-apiserver-2", "--min-request-timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := kubectl(t.Context(), bin, kc, "", "get", "nodes", "--no-headers"); err != nil || strings.Count(out, "Ready") != 3 {
		t.Errorf("second API server: %v\n%s", err, out)
	}
}

func eventually(t *testing.T, d time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %s: %v", d, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
