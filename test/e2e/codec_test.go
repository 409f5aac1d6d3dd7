package e2e

// The codec switched off: with PODSYNC_FEATURE_FastCodec=false every pod is
// decoded by client-go's standard decoding, and podsync prints the same
// bytes as with its own decoder, listing and watching. make test also runs
// the fidelity and format tests of this package with the codec off.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

const codecOff = "PODSYNC_FEATURE_FastCodec=false"

// slowLine is what podsync logs at -v=2 once it reads protobuf with
// client-go's decoding.
const slowLine = "Decoding pods with client-go's standard decoding"

// richPod has something in most of the fields a pod's bytes carry.
const richPod = `apiVersion: v1
kind: Pod
metadata:
  name: rich
  labels: {app: rich, tier: back-end}
  annotations: {note: "é \"quoted\"", empty: ""}
  finalizers: [podsync.test/keep]
spec:
  initContainers: [{name: init, image: registry.example/init:1}]
  containers:
  - name: app
    image: registry.example/app:1
    args: [--port=8080]
    env: [{name: A, value: "1"}]
    ports: [{containerPort: 8080, name: http}]
    resources: {requests: {cpu: 10m, memory: 16Mi}, limits: {memory: 32Mi}}
  - name: side
    image: registry.example/side:2
  tolerations: [{key: podsync.test/x, operator: Exists}]
  readinessGates: [{conditionType: podsync.test/gate}]
`

func TestFastCodecOffPrintsTheSame(t *testing.T) {
	if _, set := os.LookupEnv("PODSYNC_FEATURE_FastCodec"); set {
		t.Skip("compares runs with the codec on and off: the gate must not be set for the whole package")
	}
	ns := env.Namespace(t)
	runningPods(t, ns, "plain")
	env.Apply(t, ns, richPod)
	t.Cleanup(func() { releaseFinalizers(ns, "rich") })
	waitStatus(t, ns, "rich", "2/2", "Running")

	for _, args := range [][]string{nil, {"-o", "wide"}, {"--show-labels"}, {"-o", "json"}, {"-o", "yaml"}, {"-o", "name"}} {
		t.Run(strings.Join(append([]string{"args"}, args...), " "), func(t *testing.T) {
			sameOnce(t, append([]string{"-n", ns}, args...))
		})
	}

	// A watch: the same change printed by both.
	fast := env.Start(t, "-n", ns, "-o", "json", "--watch-only", "-v=6")
	slow := env.StartEnv(t, []string{codecOff}, "-n", ns, "-o", "json", "--watch-only", "-v=6")
	for _, s := range []*harness.Stream{fast, slow} {
		s.WaitStderr(`watch=true`, lineLimit)
	}
	label(t, ns, "rich", "changed=yes")
	want := fast.WaitLine(`^\{"type":"UPDATE".*"changed":"yes"`, lineLimit)
	got := slow.WaitLine(`^\{"type":"UPDATE".*"changed":"yes"`, lineLimit)
	fast.Stop(syscall.SIGINT)
	slow.Stop(syscall.SIGINT)
	if !strings.Contains(slow.Stderr(), slowLine) {
		t.Errorf("the watch with %s did not read protobuf with client-go's decoding:\n%s", codecOff, slow.Stderr())
	}
	if got != want {
		t.Errorf("the watched UPDATE differs with the codec off:\n got %s\nwant %s", got, want)
	}
}

// sameOnce runs `podsync ARGS --once` with the codec and without it, side
// by side, and wants the same stdout, byte for byte. AGE may still tick
// between the two: a run that differs is taken again, a few times.
func sameOnce(t *testing.T, args []string) {
	t.Helper()
	args = append(args, "--once", "-v=2")
	var diff string
	for attempt := 1; attempt <= 5; attempt++ {
		var on, off harness.Result
		var wg sync.WaitGroup
		wg.Go(func() { on = runEnv(nil, args) })
		wg.Go(func() { off = runEnv([]string{codecOff}, args) })
		wg.Wait()
		if on.Code != 0 || off.Code != 0 {
			t.Fatalf("want exit 0 with the codec and without it\n--- on: %s\n--- off: %s", on, off)
		}
		if !strings.Contains(off.Stderr, slowLine) || strings.Contains(on.Stderr, slowLine) {
			t.Fatalf("the codec was not switched off by %s alone:\n--- off\n%s\n--- on\n%s", codecOff, off.Stderr, on.Stderr)
		}
		if off.Stdout == on.Stdout {
			t.Logf("attempt %d: %d bytes equal", attempt, len(on.Stdout))
			return
		}
		diff = fmt.Sprintf("--- codec off\n%s--- codec on\n%s", off.Stdout, on.Stdout)
		t.Logf("attempt %d: the outputs differ", attempt)
	}
	t.Errorf("the output differs with the codec off:\n%s", diff)
}

// runEnv runs `kubectl podsync ARGS` with extraEnv to its end.
func runEnv(extraEnv, args []string) harness.Result {
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	cmd := env.Command(ctx, extraEnv, append([]string{"podsync"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return harness.Result{Code: harness.ExitCode(err), Stdout: stdout.String(), Stderr: stderr.String()}
}
