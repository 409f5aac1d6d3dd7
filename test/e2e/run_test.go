package e2e

// The contract's "How it runs" rows: --workers, --max-retries, --resync and
// --watch-only.

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// With 4 workers and a burst of changes to several pods at once, each
// pod's messages stay in order and the last one printed is the pod's final
// state in the API.
func TestWorkers(t *testing.T) {
	ns := env.Namespace(t)
	pods := []string{"w-0", "w-1", "w-2", "w-3", "w-4", "w-5"}
	runningPods(t, ns, pods...)
	s := env.Start(t, "-n", ns, "-o", "json", "--workers", "4")
	s.WaitLines(`^\{"type":"SYNC"`, len(pods), lineLimit)

	const steps = 15
	client := env.Clientset(t).CoreV1().Pods(ns)
	var wg sync.WaitGroup
	errs := make(chan error, len(pods))
	for _, name := range pods {
		wg.Go(func() {
			for i := 1; i <= steps; i++ {
				patch := fmt.Sprintf(`{"metadata":{"labels":{"step":"%d"}}}`, i)
				if _, err := client.Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
					errs <- fmt.Errorf("patch %s step %d: %w", name, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	final := map[string]*corev1.Pod{}
	for _, name := range pods {
		final[name] = apiPod(t, ns, name)
		s.WaitLine(fmt.Sprintf(`^\{"type":"UPDATE".*"resourceVersion":"%s"`, final[name].ResourceVersion), lineLimit)
	}
	r := s.Stop(syscall.SIGINT)
	if r.Code != 130 {
		t.Errorf("exit after SIGINT: %d\n%s", r.Code, r.Stderr)
	}
	noErrors(t, r.Stderr)

	last := map[string]*corev1.Pod{}
	updates := 0
	for _, ev := range jsonEvents(t, s.Lines()) {
		p := ev.Pod
		if prev := last[p.Name]; prev != nil && rv(t, &p) <= rv(t, prev) {
			t.Errorf("%s: %s resourceVersion %s printed after %s: out of order", p.Name, ev.Type, p.ResourceVersion, prev.ResourceVersion)
		}
		if ev.Type == "UPDATE" {
			updates++
		}
		last[p.Name] = &p
	}
	for _, name := range pods {
		got, want := last[name], final[name]
		if got.ResourceVersion != want.ResourceVersion || got.Labels["step"] != fmt.Sprint(steps) {
			t.Errorf("%s: last printed resourceVersion %s step=%s, the API has %s step=%s",
				name, got.ResourceVersion, got.Labels["step"], want.ResourceVersion, want.Labels["step"])
		}
	}
	t.Logf("%d changes to %d pods printed as %d UPDATE messages", steps*len(pods), len(pods), updates)

	bad := env.Podsync(t, runLimit, "-n", ns, "--workers", "0")
	if bad.Code != 2 || !oneErrorLine(bad.Stderr, "--workers") {
		t.Errorf("--workers 0: want exit 2 and one error line\n%s", bad)
	}
}

// A message the template cannot print (a pod without the key, with
// --allow-missing-template-keys=false) is reported on stderr in one short
// line, and the stream goes on; the pod is still judged: a check on a pod
// that cannot be printed must not pass while the pod is not ready.
func TestUnprintablePodIsJudged(t *testing.T) {
	ns := env.Namespace(t)
	env.Apply(t, ns, podYAML("labelled", map[string]string{"missing": "here"}, ""))
	env.Apply(t, ns, neverReadyPod("bare"))
	waitStatus(t, ns, "labelled", "1/1", "Running")
	waitStatus(t, ns, "bare", "0/1", "Running")
	strict := []string{"--allow-missing-template-keys=false", "-o", `jsonpath={.metadata.name}={.metadata.labels.missing}{"\n"}`}

	s := env.Start(t, append([]string{"-n", ns}, strict...)...)
	s.WaitLine(`^labelled=here$`, lineLimit)
	failed := regexp.MustCompile(`(?m)^error: print SYNC ` + regexp.QuoteMeta(ns) + `/bare: .*missing.*$`)
	s.WaitStderr(failed.String(), lineLimit)
	env.Apply(t, ns, podYAML("later", map[string]string{"missing": "later"}, ""))
	s.WaitLine(`^later=later$`, lineLimit)
	label(t, ns, "labelled", "missing=again")
	s.WaitLine(`^labelled=again$`, lineLimit)
	r := s.Stop(syscall.SIGINT)
	if n := len(failed.FindAllString(r.Stderr, -1)); n != 1 {
		t.Errorf("%d print errors for bare's SYNC, want 1:\n%s", n, r.Stderr)
	}
	for _, l := range strings.Split(r.Stderr, "\n") {
		if strings.HasPrefix(l, "error:") && (len(l) > 400 || strings.Contains(l, "object given")) {
			t.Errorf("the error is not short (%d bytes): %.500s", len(l), l)
		}
	}
	if strings.Contains(r.Stdout, "bare") {
		t.Errorf("stdout shows the pod that cannot be printed:\n%s", r.Stdout)
	}

	check := env.Podsync(t, runLimit, append([]string{"-n", ns, "--until", "ready", "--timeout", "5s"}, strict...)...)
	if check.Code != 3 || !strings.Contains(check.Stderr, "Pod "+ns+"/bare is not satisfied") {
		t.Errorf("--until ready with a not-ready pod that cannot be printed: want exit 3 explaining bare\n%s", check)
	}

	// kubectl's go-template printer writes a debugging dump where it
	// prints; none of it, nor the part before the failing key, reaches
	// stdout.
	r = once(t, "-n", ns, "labelled", "bare", "--allow-missing-template-keys=false",
		"-o", `go-template={{.metadata.name}}={{.metadata.labels.missing}}{{"\n"}}`)
	if r.Stdout != "labelled=again\n" {
		t.Errorf("go-template stdout %q, want only labelled's line", r.Stdout)
	}
	if !regexp.MustCompile(`(?m)^error: print SYNC ` + regexp.QuoteMeta(ns) + `/bare: .*missing`).MatchString(r.Stderr) {
		t.Errorf("go-template: no print error for bare:\n%s", r.Stderr)
	}
}

// neverReadyPod is a pod kwok keeps Running but never ready.
func neverReadyPod(name string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  annotations:\n    podsync.test/state: never-ready\n" +
		"spec:\n  containers:\n  - name: app\n    image: registry.example/app:1\n"
}

// --request-timeout bounds each request, not a watch, in every output
// mode (with -o json a client timeout would also cut every watch, which
// would reconnect every few seconds).
func TestRequestTimeoutDoesNotCutWatches(t *testing.T) {
	ns := env.Namespace(t)
	runningPods(t, ns, "steady")
	for format, change := range map[string]string{"json": `"format":"json"`, "wide": `^UPDATE\s+steady\s.*metadata\.labels$`} {
		s := env.Start(t, "-n", ns, "-o", format, "--request-timeout", "2s", "-v=6")
		s.WaitStderr(`watch=true`, lineLimit)
		time.Sleep(7 * time.Second)
		label(t, ns, "steady", "format="+format)
		s.WaitLine(change, lineLimit)
		r := s.Stop(syscall.SIGINT)
		if n := count(strings.Split(r.Stderr, "\n"), `watch=true.*(200 OK|status)`); n != 1 {
			t.Errorf("-o %s: %d watch requests in 7 s with --request-timeout 2s, want 1\n%s", format, n, r.Stderr)
		}
		if strings.Contains(r.Stderr, "lost the connection") {
			t.Errorf("-o %s: the watch was cut\n%s", format, r.Stderr)
		}
	}
}

// With a short --resync, the informer resyncs (client-go logs it at -v=4)
// but idle pods print nothing; a real change still prints one UPDATE.
func TestResync(t *testing.T) {
	ns := env.Namespace(t)
	runningPods(t, ns, "idle-1", "idle-2")
	s := env.Start(t, "-n", ns, "--resync", "1s", "-v=4")
	s.WaitLines(`^SYNC\s`, 2, lineLimit)
	s.WaitStderr(`(?s)(Forcing resync.*){4}`, lineLimit)
	if n := count(s.Lines(), `^UPDATE`); n != 0 {
		t.Fatalf("%d UPDATE lines for idle pods after resyncs:\n%s", n, s.Dump())
	}
	label(t, ns, "idle-1", "touched=yes")
	s.WaitLine(`^UPDATE\s+idle-1\s.*metadata\.labels`, lineLimit)
	s.WaitStderr(`(?s)(Forcing resync.*){8}`, lineLimit)
	r := s.Stop(syscall.SIGINT)
	if n := count(s.Lines(), `^UPDATE`); n != 1 {
		t.Errorf("%d UPDATE lines, want the one for the real change:\n%s", n, r.Stdout)
	}
}

// --watch-only prints no SYNC; changes to listed pods are UPDATEs whose
// CHANGES compare with the state at the start, new pods are ADDs.
func TestWatchOnly(t *testing.T) {
	ns := env.Namespace(t)
	runningPods(t, ns, "old-1", "old-2")
	s := env.Start(t, "-n", ns, "--watch-only", "-v=6")
	s.WaitStderr(`watch=true`, lineLimit)
	label(t, ns, "old-1", "touched=yes")
	s.WaitLine(`^UPDATE\s+old-1\s+1/1\s+Running\s.*\smetadata\.labels$`, lineLimit)
	env.Apply(t, ns, podYAML("new-1", nil, ""))
	s.WaitLine(`^ADD\s+new-1\s`, lineLimit)
	r := s.Stop(syscall.SIGINT)
	if n := count(s.Lines(), `^SYNC`); n != 0 {
		t.Errorf("%d SYNC lines with --watch-only:\n%s", n, r.Stdout)
	}
	if n := count(s.Lines(), `old-2`); n != 0 {
		t.Errorf("the unchanged listed pod was printed:\n%s", r.Stdout)
	}
	if lines := s.Lines(); !strings.HasPrefix(lines[0], "EVENT ") || count(lines, `^EVENT`) != 1 {
		t.Errorf("want one header, first:\n%s", r.Stdout)
	}

	bad := env.Podsync(t, runLimit, "-n", ns, "--watch-only", "--once")
	if bad.Code != 2 || !oneErrorLine(bad.Stderr, "--watch-only") {
		t.Errorf("--watch-only with --once: want exit 2 and one error line\n%s", bad)
	}
}

// Every change after the initial list is printed with --watch-only, also
// one that arrives while the workers are still taking the listed pods
// (such a change must not fold into the hidden SYNC and be lost; on a big
// namespace the window is the whole list). The namespace holds
// 2,000 pods (held before scheduling, so nothing else changes them), one
// worker takes them, and each pod is changed once, as soon as podsync's
// list has been answered (or streamed), many at a time, so that hundreds of changes
// land in that window.
func TestWatchOnlyKeepsChangesDuringTheList(t *testing.T) {
	ns := env.Namespace(t)
	client := env.Clientset(t).CoreV1().Pods(ns)
	pods := make([]string, 2000)
	for i := range pods {
		pods[i] = fmt.Sprintf("w%04d", i)
	}
	parallel(t, pods, func(name string) error {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "podsync.test/hold"}},
			Containers:      []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}
		_, err := client.Create(context.Background(), p, metav1.CreateOptions{})
		return err
	})
	s := env.Start(t, "-n", ns, "--watch-only", "-o", "json", "--workers", "1", "-v=6")
	// The list is in: a paginated list's first answer, or the bookmark
	// that ends a streaming list (client-go's reflector says so at -v=4).
	s.WaitStderr(`url="[^"]*/namespaces/`+regexp.QuoteMeta(ns)+`/pods\?limit=[^"]*" status="200 OK"|received the bookmark that marks the end of initial events`, lineLimit)
	patch := []byte(`{"metadata":{"labels":{"touched":"yes"}}}`)
	parallel(t, pods, func(name string) error {
		_, err := client.Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	missing := func() []string {
		seen := map[string]bool{}
		for _, ev := range jsonEvents(t, s.Lines()) {
			if ev.Type == "UPDATE" && ev.Pod.Labels["touched"] == "yes" {
				seen[ev.Pod.Name] = true
			}
		}
		var out []string
		for _, p := range pods {
			if !seen[p] {
				out = append(out, p)
			}
		}
		return out
	}
	harness.Eventually(t, lineLimit, func() string {
		m := missing()
		return fmt.Sprintf("an UPDATE of every touched pod; %d missing: %.300v", len(m), m)
	}, func() bool { return len(missing()) == 0 })
	r := s.Stop(syscall.SIGINT)
	if n := count(s.Lines(), `^\{"type":"SYNC"`); n != 0 {
		t.Errorf("%d SYNC lines with --watch-only", n)
	}
	noErrors(t, r.Stderr)
}

// parallel calls f for every name, 16 at a time, and fails the test on
// the first error.
func parallel(t *testing.T, names []string, f func(string) error) {
	t.Helper()
	work := make(chan string, len(names))
	for _, n := range names {
		work <- n
	}
	close(work)
	errs := make(chan error, len(names))
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for name := range work {
				if err := f(name); err != nil {
					errs <- fmt.Errorf("%s: %w", name, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
