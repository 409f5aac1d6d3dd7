//go:build unix

package localcluster

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCRILines(t *testing.T) {
	start := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	got := string(criLines(start, []string{"one", "two\nthree", ""}))
	want := "2026-12-03T10:00:00Z stdout F one\n" +
		"2026-12-03T10:00:00.000001Z stdout F two\n" +
		"2026-12-03T10:00:00.000002Z stdout F three\n" +
		"2026-12-03T10:00:00.000003Z stdout F \n"
	if got != want {
		t.Errorf("criLines:\n%s\nwant:\n%s", got, want)
	}
}

// lines splits kubectl's output into lines, without the final newline.
func lines(out string) []string {
	if out == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

func equalLines(t *testing.T, what, out string, want []string) {
	t.Helper()
	if got := lines(out); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s: got %q, want %q", what, got, want)
	}
}

// testLogs runs kubectl logs through the API server to kwok's kubelet
// endpoint, with the options users and podsync rely on, and checks who
// may read logs and events.
func testLogs(t *testing.T, c *Cluster, bin string, k kubectlFunc) {
	k(t, `apiVersion: v1
kind: Pod
metadata: {name: logged, namespace: default}
spec:
  containers: [{name: app, image: "busybox:1.36"}, {name: sidecar, image: "busybox:1.36"}]
`, "apply", "-f", "-")
	k(t, "", "wait", "--for=condition=Ready", "pod/logged", "--timeout=60s")

	if ip := k(t, "", "get", "pod", "logged", "-o", "jsonpath={.status.hostIP}"); ip != "127.0.0.1" {
		t.Errorf("hostIP = %q, want 127.0.0.1", ip)
	}
	node := k(t, "", "get", "pod", "logged", "-o", "jsonpath={.spec.nodeName}")
	addr := k(t, "", "get", "node", node, "-o", `jsonpath={.status.addresses[?(@.type=="InternalIP")].address} {.status.daemonEndpoints.kubeletEndpoint.Port}`)
	kwokPort := strings.TrimPrefix(c.named(Kwok)[0].Health, "http://127.0.0.1:")
	if want := "127.0.0.1 " + strings.TrimSuffix(kwokPort, "/healthz"); addr != want {
		t.Errorf("node %s InternalIP and kubelet port = %q, want %q", node, addr, want)
	}

	current := []string{"starting", "listening on :8080", "GET /healthz 200", "GET / 200", "shutting down"}
	previous := []string{"starting", "panic: boom"}
	err := c.SetLogs(t.Context(), "default", "logged", map[string]ContainerLog{
		"app":        {Current: current, Previous: previous},
		AnyContainer: {Current: []string{"sidecar ready"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, "logs", k(t, "", "logs", "logged", "-c", "app"), current)
	equalLines(t, "logs --previous", k(t, "", "logs", "--previous", "logged", "-c", "app"), previous)
	equalLines(t, "logs --tail 2", k(t, "", "logs", "--tail", "2", "logged", "-c", "app"), current[3:])
	if out := k(t, "", "logs", "--limit-bytes", "12", "logged", "-c", "app"); out != "starting\nlis" {
		t.Errorf("logs --limit-bytes 12 = %q, want %q", out, "starting\nlis")
	}
	equalLines(t, "logs of the container without its own entry", k(t, "", "logs", "logged", "-c", "sidecar"), []string{"sidecar ready"})
	equalLines(t, "logs --previous of a container without a previous log", k(t, "", "logs", "--previous", "logged", "-c", "sidecar"), nil)
	stamped := lines(k(t, "", "logs", "--timestamps", "logged", "-c", "app"))
	if len(stamped) != len(current) || !strings.HasSuffix(stamped[0], "Z starting") {
		t.Errorf("logs --timestamps = %q", stamped)
	}

	if err := c.AppendLog("default", "logged", "app", "restarted"); err != nil {
		t.Fatal(err)
	}
	equalLines(t, "logs after AppendLog", k(t, "", "logs", "--tail", "1", "logged", "-c", "app"), []string{"restarted"})
	testFollow(t, c, bin)

	t.Run("rights", func(t *testing.T) { testLogRights(t, c, bin) })
	t.Run("kubelet CA is checked", func(t *testing.T) { testKubeletCA(t, c, bin) })
}

// testFollow shows that a line appended to the file reaches a running
// `kubectl logs -f` at once (-f never ends by itself with kwok).
func testFollow(t *testing.T, c *Cluster, bin string) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "kubectl"), "--kubeconfig", c.Kubeconfig, "logs", "-f", "--tail", "1", "logged", "-c", "app")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(out)
	next := func() string {
		if !sc.Scan() {
			t.Fatalf("kubectl logs -f ended: %v", sc.Err())
		}
		return sc.Text()
	}
	if got := next(); got != "restarted" {
		t.Fatalf("kubectl logs -f --tail 1 started with %q", got)
	}
	began := time.Now()
	if err := c.AppendLog("default", "logged", "app", "followed"); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != "followed" {
		t.Errorf("kubectl logs -f printed %q after AppendLog, want followed", got)
	}
	t.Logf("an appended line reached kubectl logs -f after %s", time.Since(began).Round(time.Millisecond))
}

func testLogRights(t *testing.T, c *Cluster, bin string) {
	as := func(context string, args ...string) (string, error) {
		return kubectl(t.Context(), bin, c.Kubeconfig, "", append([]string{"--context", context}, args...)...)
	}
	if _, err := as(NoPodLogsContext, "get", "pods", "-A"); err != nil {
		t.Errorf("%s may list pods: %v", NoPodLogsContext, err)
	}
	if _, err := as(NoPodLogsContext, "get", "events", "-A"); err != nil {
		t.Errorf("%s may list events: %v", NoPodLogsContext, err)
	}
	out, err := as(NoPodLogsContext, "logs", "logged", "-c", "app")
	if err == nil || !strings.Contains(out, "Forbidden") || !strings.Contains(out, `"pods/log"`) {
		t.Errorf("%s logs: want Forbidden on pods/log, got %v:\n%s", NoPodLogsContext, err, out)
	}
	if out, err := as(NoEventsContext, "logs", "logged", "-c", "app", "--tail", "1"); err != nil || out != "followed\n" {
		t.Errorf("%s may read logs: %v: %q", NoEventsContext, err, out)
	}
	out, err = as(NoEventsContext, "get", "events")
	if err == nil || !strings.Contains(out, `cannot list resource "events"`) {
		t.Errorf("%s get events: want Forbidden, got %v:\n%s", NoEventsContext, err, out)
	}
	out, err = as(RestrictedContext, "logs", "logged", "-c", "app")
	if err == nil || !strings.Contains(out, "Forbidden") {
		t.Errorf("%s logs: want Forbidden, got %v:\n%s", RestrictedContext, err, out)
	}
	// A user of the group, made the way tests make their own users.
	kc := filepath.Join(t.TempDir(), "watcher.kubeconfig")
	if err := c.WriteUserKubeconfig(kc, "watcher", NoPodLogsGroup); err != nil {
		t.Fatal(err)
	}
	if out, err := kubectl(t.Context(), bin, kc, "", "get", "pods"); err != nil {
		t.Errorf("watcher in %s may list pods: %v\n%s", NoPodLogsGroup, err, out)
	}
	out, err = kubectl(t.Context(), bin, kc, "", "logs", "logged", "-c", "app")
	if err == nil || !strings.Contains(out, `User "watcher" cannot get resource "pods/log"`) {
		t.Errorf("watcher logs: want Forbidden, got %v:\n%s", err, out)
	}
}

// testKubeletCA proves that the API server verifies kwok's certificate: a
// second API server that trusts another CA for kubelets cannot get logs.
func testKubeletCA(t *testing.T, c *Cluster, bin string) {
	kc, err := c.StartAPIServer(t.Context(), "kube-apiserver-wrong-kubelet-ca",
		"--kubelet-certificate-authority="+c.pkiPath("front-proxy-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Kill("kube-apiserver-wrong-kubelet-ca"); err != nil {
			t.Error(err)
		}
	}()
	out, err := kubectl(t.Context(), bin, kc, "", "logs", "logged", "-c", "app")
	if err == nil || !strings.Contains(out, "x509: certificate signed by unknown authority") {
		t.Errorf("logs through an API server with the wrong kubelet CA: want x509 error, got %v:\n%s", err, out)
	}
}

// testCrashLoopLogs checks the log crash-looping pods get without any
// SetLogs call: a pod, and a Deployment's pod, whose name is generated.
func testCrashLoopLogs(t *testing.T, c *Cluster, bin string, k kubectlFunc) {
	k(t, fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: crashers, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: crashers}}
  template:
    metadata: {labels: {app: crashers}, annotations: {%[1]s: %[2]s}}
    spec:
      containers: [{name: app, image: "registry.example/app:1"}]
---
apiVersion: v1
kind: Pod
metadata: {name: crasher, namespace: default, annotations: {%[1]s: %[2]s}}
spec:
  containers: [{name: app, image: "registry.example/app:1"}]
`, StateAnnotation, StateCrashLoop), "apply", "-f", "-")
	want := CrashLoopLog()
	for _, target := range []string{"pod/crasher", "deployment/crashers"} {
		for _, previous := range []bool{false, true} {
			args, lines := []string{"logs", target}, want.Current
			if previous {
				args, lines = append(args, "--previous"), want.Previous
			}
			eventually(t, 30*time.Second, func() error {
				out, err := kubectl(t.Context(), bin, c.Kubeconfig, "", args...)
				if err != nil {
					return err
				}
				if got := strings.TrimSuffix(out, "\n"); got != strings.Join(lines, "\n") {
					return fmt.Errorf("kubectl %s printed %q", strings.Join(args, " "), got)
				}
				return nil
			})
		}
	}
	last := k(t, "", "logs", "--tail", "1", "pod/crasher")
	if last != CrashLoopLastLine+"\n" {
		t.Errorf("last line of a crash-looping pod's log = %q, want %q", last, CrashLoopLastLine)
	}
}
