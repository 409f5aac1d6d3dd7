package faults

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// failedLog is the log of the failed pods of these tests.
var failedLog = []string{"starting migration 42", "Error: relation \"orders\" does not exist"}

// failedPod creates a pod that fails (phase Failed, its container ended
// with exit code 1) and gives it failedLog: one failure state that never
// changes, so the run diagnoses it exactly once.
func failedPod(t *testing.T, tc *testCluster, ns, name string) {
	t.Helper()
	tc.Apply(t, ns, harness.PodYAML(name, map[string]string{localcluster.StateAnnotation: localcluster.StateError}))
	harness.Eventually(t, 2*time.Minute, harness.Text("pod "+name+" to fail"), func() bool {
		p, err := tc.cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodFailed
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := tc.Cluster.SetLogs(ctx, ns, name, map[string]localcluster.ContainerLog{"app": {Current: failedLog}}); err != nil {
		t.Fatal(err)
	}
}

// proxied runs `kubectl podsync ARGS` through a pods/log fault proxy.
func proxied(t *testing.T, tc *testCluster, ns string, fault logFault, args ...string) (harness.Result, *logFaultProxy) {
	t.Helper()
	admin, err := tc.Cluster.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	p := newLogFaultProxy(t, admin, fault)
	kubeconfig := writeKubeconfig(t, p.srv.URL, p.caPEM(), &clientcmdapi.AuthInfo{}, ns)
	r := tc.PodsyncEnv(t, 2*time.Minute, []string{"KUBECONFIG=" + kubeconfig}, args...)
	t.Logf("kubectl podsync %s: exit %d after %s; %d pods/log requests, %v apart",
		strings.Join(args, " "), r.Code, r.Took.Round(time.Millisecond), len(p.logRequests()), p.gaps())
	return r, p
}

var (
	retryLine   = regexp.MustCompile(`(?m)"Retrying the work of a pod key" key="([^"]+)" attempt=(\d+) delay="([^"]+)"`)
	verdictLine = regexp.MustCompile(`Verdict:  failed \(exit 4\) after (\S+)`)
)

// failedCheck runs `--until succeeded` on a failed pod through a pods/log
// fault proxy, at -v=4, and requires exit 4.
func failedCheck(t *testing.T, fault logFault) (harness.Result, *logFaultProxy) {
	t.Helper()
	tc := sharedCluster(t)
	ns := tc.Namespace(t)
	failedPod(t, tc, ns, "migrate")
	r, p := proxied(t, tc, ns, fault, "migrate", "--until", "succeeded", "--timeout", "1m", "-v=4")
	if r.Code != 4 {
		t.Fatalf("exit %d, want 4\n%s", r.Code, r)
	}
	return r, p
}

// verdictTime is the time the summary gives for the verdict.
func verdictTime(t *testing.T, r harness.Result) time.Duration {
	t.Helper()
	m := verdictLine.FindStringSubmatch(r.Stderr)
	if m == nil {
		t.Fatalf("no failed verdict\n%s", r)
	}
	d, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// pods/log answers 503 twice, then the log: the workers retry the
// diagnosis through the rate-limited queue (two retries at -v=4), and
// the explanation has the log.
func TestDiagnosisRetriedThroughTheQueue(t *testing.T) {
	r, p := failedCheck(t, failFirst(2, 503, ""))
	retries := retryLine.FindAllStringSubmatch(r.Stderr, -1)
	var delays []string
	for _, m := range retries {
		delays = append(delays, m[3])
	}
	t.Logf("retries at -v=4: %d, delays %v; verdict after %s", len(retries), delays, verdictTime(t, r))
	if len(retries) != 2 || !strings.HasSuffix(retries[0][1], "/migrate") {
		t.Errorf("%d retries at -v=4, want 2 for the pod migrate\n%s", len(retries), r)
	}
	if n := len(p.logRequests()); n != 3 {
		t.Errorf("%d pods/log requests, want 3", n)
	}
	for _, want := range []string{"    Log, last 2 lines (current instance):\n      starting migration 42\n      Error: relation \"orders\" does not exist\n"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr lacks %q\n%s", want, r)
		}
	}
	if strings.Contains(r.Stderr, "gave up") {
		t.Errorf("the diagnosis was dropped\n%s", r)
	}
}

// pods/log always fails: a stream with --diagnose drops the diagnosis
// after --max-retries with one line and goes on; a check's verdict comes
// as fast as with a working pods/log, and its summary waits at most 2s,
// saying the diagnosis is missing.
func TestDiagnosisDroppedWhenLogsAlwaysFail(t *testing.T) {
	tc := sharedCluster(t)
	ns := tc.Namespace(t)
	failedPod(t, tc, ns, "migrate")
	always := func(int) (int, string) { return 503, "" }

	r, p := proxied(t, tc, ns, always, "--diagnose", "--timeout", "8s", "-v=4")
	if r.Code != 0 {
		t.Fatalf("stream: exit %d, want 0\n%s", r.Code, r)
	}
	drop := fmt.Sprintf("error: pod %s/migrate: gave up after 5 failed attempts: diagnosis: log of container \"app\": the server is currently unable to handle the request", ns)
	if n := strings.Count(r.Stderr, drop); n != 1 {
		t.Errorf("%d drop lines, want 1: %q\n%s", n, drop, r)
	}
	if n := len(p.logRequests()); n != 5 {
		t.Errorf("%d pods/log requests, want 5 (--max-retries 5)", n)
	}
	if !strings.Contains(r.Stdout, "    migrate: no log of container app: gave up after 5 failed attempts") {
		t.Errorf("the stream does not show the dropped diagnosis\n%s", r)
	}
	t.Logf("pods/log requests %v apart before the drop", p.gaps())

	healthy, _ := proxied(t, tc, ns, func(int) (int, string) { return 0, "" }, "migrate", "--until", "succeeded", "--timeout", "1m", "-v=1")
	failing, _ := proxied(t, tc, ns, always, "migrate", "--until", "succeeded", "--timeout", "1m", "-v=1")
	for name, res := range map[string]harness.Result{"working pods/log": healthy, "failing pods/log": failing} {
		if res.Code != 4 {
			t.Fatalf("%s: exit %d, want 4\n%s", name, res.Code, res)
		}
		t.Logf("%s: verdict after %s, process ended after %s", name, verdictTime(t, res), res.Took.Round(time.Millisecond))
	}
	if v := verdictTime(t, failing); v > verdictTime(t, healthy)+time.Second {
		t.Errorf("verdict after %s with a failing pods/log, %s with a working one", v, verdictTime(t, healthy))
	}
	// Each from its own clock's start: the two processes may start at
	// different speeds on a loaded machine.
	if f, h := harness.SinceClock(t, failing), harness.SinceClock(t, healthy); f > h+3*time.Second {
		t.Errorf("a failing pods/log delayed the end by %s", f-h)
	}
	if !strings.Contains(failing.Stderr, "  Missing: diagnosis: not done within 2s of the verdict\n") {
		t.Errorf("the summary does not say the diagnosis is missing\n%s", failing)
	}
}

// 429 with Retry-After: the next attempt waits at least that long.
func TestDiagnosisHonoursRetryAfter(t *testing.T) {
	r, p := failedCheck(t, failFirst(1, 429, "1"))
	retries := retryLine.FindAllStringSubmatch(r.Stderr, -1)
	if len(retries) != 1 || retries[0][3] != "1s" {
		t.Errorf("retries at -v=4 %v, want one with delay 1s\n%s", retries, r)
	}
	if gaps := p.gaps(); len(gaps) != 1 || gaps[0] < time.Second {
		t.Errorf("pods/log requests %v apart, want one retry after at least 1s", gaps)
	}
	if !strings.Contains(r.Stderr, "starting migration 42") {
		t.Errorf("the explanation lacks the log\n%s", r)
	}
}

// RBAC forbids pods/log: one warning for the run, no retry, and the
// other pods of the namespace are not asked.
func TestDiagnosisForbiddenLogsSaidOnce(t *testing.T) {
	tc := sharedCluster(t)
	ns := tc.Namespace(t)
	failedPod(t, tc, ns, "first")
	failedPod(t, tc, ns, "second")
	r := tc.Podsync(t, 2*time.Minute, "--context", localcluster.NoPodLogsContext, "-n", ns, "--diagnose", "--timeout", "6s", "-v=6")
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s", r.Code, r)
	}
	warnings := regexp.MustCompile(`(?m)^warning: cannot read pods/log: .*forbidden.*$`).FindAllString(r.Stderr, -1)
	if len(warnings) != 1 {
		t.Errorf("%d warnings, want 1\n%s", len(warnings), r)
	}
	requests := regexp.MustCompile(`(?m)url="https://[^"]+/pods/[^/"]+/log\?`).FindAllString(r.Stderr, -1)
	if len(requests) != 1 {
		t.Errorf("%d pods/log requests, want 1 (no retry, no second pod)\n%s", len(requests), r)
	}
	if strings.Contains(r.Stderr, "Retrying the work") || strings.Contains(r.Stderr, "gave up") {
		t.Errorf("a refusal was retried\n%s", r)
	}
	for _, want := range []string{
		"    first: no log of container app: pods \"first\" is forbidden: ",
		"    second: no log of container app: not asked: pods/log was refused in namespace " + ns + ": ",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("the stream lacks %q\n%s", want, r)
		}
	}
	t.Logf("warning: %s", warnings)
}
