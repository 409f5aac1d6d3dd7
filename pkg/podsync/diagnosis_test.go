package podsync_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/output"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
)

// logAPI answers pods/log with logReply and events with one BackOff
// Warning, counting the requests of each.
type logAPI struct {
	logs     atomic.Int32
	events   atomic.Int32
	logReply func(w http.ResponseWriter, r *http.Request)
}

func (a *logAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/log"):
		a.logs.Add(1)
		a.logReply(w, r)
	case strings.HasSuffix(r.URL.Path, "/events"):
		a.events.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&corev1.EventList{TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "v1"}, Items: []corev1.Event{{
			Type: "Warning", Reason: "BackOff", Message: "Back-off restarting failed container", Count: 3,
			LastTimestamp: metav1.NewTime(time.Now().Add(-time.Second)),
		}}})
	default:
		http.NotFound(w, r)
	}
}

// crashPod is a pod whose container crashed once and waits in
// CrashLoopBackOff.
func crashPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "crash", Namespace: "a", UID: "uid-crash", Labels: map[string]string{"app": "sim"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app", RestartCount: 1,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}},
		}}},
	}
}

// checkCrash runs `--until ready` on the crash-looping pod, with the
// logs of api, and returns the outcome, stderr and how long it took.
func checkCrash(t *testing.T, api *logAPI, maxRetries int) (podsync.Outcome, string, time.Duration) {
	t.Helper()
	cfg, _, stderr := runConfig(t, "ready", "name")
	cfg.MaxRetries, cfg.LogLines, cfg.Timeout = maxRetries, 10, time.Minute
	start := time.Now()
	out := runCrash(t, api, cfg)
	return out, stderr.String(), time.Since(start)
}

// runCrash runs cfg on the crash-looping pod, with the logs of api.
func runCrash(t *testing.T, api *logAPI, cfg podsync.Config) podsync.Outcome {
	t.Helper()
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	s := newSim(false)
	s.put(crashPod())
	return podsync.Run(context.Background(), cfg, podsync.Cluster{Clients: &podsync.Clients{Kube: cs}, Source: s.source()})
}

// --once --diagnose prints the diagnoses of the pods it lists before it
// ends (waiting for them at most 2s).
func TestOnceWaitsForDiagnoses(t *testing.T) {
	api := &logAPI{logReply: func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("crashed\n")) }}
	cfg, stdout, _ := runConfig(t, "", "name")
	cfg.Once, cfg.Diagnose, cfg.LogLines = true, true, 10
	out := runCrash(t, api, cfg)
	if out.ExitCode() != podsync.ExitOK || stdout.String() != "pod/crash synced\npod/crash diagnosed\n" {
		t.Errorf("exit %d, stdout %q", out.ExitCode(), stdout.String())
	}
}

// runConfig is the Config of a run in namespace a: a check of until (""
// for a plain stream), printed in format (-o), to fresh buffers.
func runConfig(t *testing.T, until, format string) (podsync.Config, *lockedBuffer, *lockedBuffer) {
	t.Helper()
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	pf := get.NewGetPrintFlags()
	pf.AddFlags(&cobra.Command{})
	*pf.OutputFormat = format
	w, err := output.New(output.Options{PrintFlags: pf, Out: stdout})
	if err != nil {
		t.Fatal(err)
	}
	flags := check.Flags{MinPods: check.Unset, MaxRestarts: check.Unset}
	if until != "" {
		flags.Until, flags.UntilSet = until, true
	}
	spec, err := flags.Spec()
	if err != nil {
		t.Fatal(err)
	}
	return podsync.Config{Scope: podsync.Scope{Namespace: "a"}, Output: w, Stdout: stdout, ErrOut: stderr, Check: spec,
		Workers: 1, MaxRetries: 5}, stdout, stderr
}

func TestCheckExplainsWithPreviousLog(t *testing.T) {
	api := &logAPI{logReply: func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("previous") != "true" {
			http.Error(w, "want the previous instance", http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte("starting\nError: database.url: required key is missing\n"))
	}}
	out, stderr, took := checkCrash(t, api, 5)
	if out.ExitCode() != podsync.ExitFailed {
		t.Fatalf("exit %d, want 4\n%s", out.ExitCode(), stderr)
	}
	for _, want := range []string{
		"    Log, last 2 lines (previous instance):\n      starting\n      Error: database.url: required key is missing\n",
		"Warning  BackOff  x3  Back-off restarting failed container",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q\n%s", want, stderr)
		}
	}
	if n := api.events.Load(); n != 1 {
		t.Errorf("%d Events lists, want 1: the summary takes the diagnosis's", n)
	}
	t.Logf("verdict and summary after %s", took)
	if took > time.Second {
		t.Errorf("took %s, want well under the 2s a diagnosis may delay it", took)
	}
}

// A pods/log that never answers delays the summary by at most 2s, and
// the explanation says the diagnosis is missing.
func TestCheckDoesNotWaitForAHangingLog(t *testing.T) {
	hang := make(chan struct{})
	api := &logAPI{logReply: func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}}
	defer close(hang)
	out, stderr, took := checkCrash(t, api, 5)
	if out.ExitCode() != podsync.ExitFailed {
		t.Fatalf("exit %d, want 4\n%s", out.ExitCode(), stderr)
	}
	if !strings.Contains(stderr, "  Missing: diagnosis: not done within 2s of the verdict\n") {
		t.Errorf("stderr does not say the diagnosis is missing\n%s", stderr)
	}
	t.Logf("verdict and summary after %s with a hanging pods/log", took)
	if took < 2*time.Second || took > 3*time.Second {
		t.Errorf("took %s, want the 2s grace and not much more", took)
	}
}

// A pods/log that always fails: retried by the queue, dropped after
// --max-retries attempts with one line, and the check's verdict and
// explanation go on with what the diagnosis has.
func TestCheckDropsAFailingLog(t *testing.T) {
	api := &logAPI{logReply: func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "kubelet unreachable", http.StatusServiceUnavailable)
	}}
	out, stderr, took := checkCrash(t, api, 3)
	if out.ExitCode() != podsync.ExitFailed {
		t.Fatalf("exit %d, want 4\n%s", out.ExitCode(), stderr)
	}
	if n := api.logs.Load(); n != 3 {
		t.Errorf("%d log requests, want 3 (--max-retries 3)", n)
	}
	if n := strings.Count(stderr, "error: pod a/crash: gave up after 3 failed attempts: diagnosis: log of container \"app\": the server is currently unable to handle the request"); n != 1 {
		t.Errorf("%d drop lines, want 1\n%s", n, stderr)
	}
	if !strings.Contains(stderr, "    Log: not available: gave up after 3 failed attempts") {
		t.Errorf("the explanation does not say why the log is missing\n%s", stderr)
	}
	t.Logf("verdict and summary after %s with a failing pods/log (%d attempts)", took, api.logs.Load())
}

// No verdict depends on a pod its controller left behind (evicted, a
// ReplicaSet's): a check does not fetch its logs, and names it once.
func TestLeftBehindIsNotDiagnosed(t *testing.T) {
	api := &logAPI{logReply: func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("killed\n")) }}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, stderr := runConfig(t, "ready", "name")
	cfg.LogLines, cfg.Timeout = 10, 500*time.Millisecond
	s := newSim(false)
	left := newSimPod("a", "web-1", 1, evicted, "")
	controlledBy(left, "replicaset")
	s.put(left)
	s.put(newSimPod("a", "slow", 1, runningNotReady, ""))
	out := podsync.Run(context.Background(), cfg, podsync.Cluster{Clients: &podsync.Clients{Kube: cs}, Source: s.source()})
	if out.ExitCode() != podsync.ExitNotMet {
		t.Fatalf("exit %d, want 3\n%s", out.ExitCode(), stderr)
	}
	if n := api.logs.Load(); n != 0 {
		t.Errorf("%d log requests, want none: the only failed pod is left behind", n)
	}
	for _, want := range []string{
		"podsync: pod a/web-1 was evicted and replaced by its ReplicaSet sim-rs; not judged\n",
		"Replaced: 1 evicted pod left behind, replaced, not judged: a/web-1\n",
	} {
		if strings.Count(stderr.String(), want) != 1 {
			t.Errorf("stderr does not hold once %q\n%s", want, stderr)
		}
	}
}
