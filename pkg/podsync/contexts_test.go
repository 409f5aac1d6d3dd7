package podsync_test

import (
	"context"
	"net"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/output"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source"
)

// multiRun is a run over the named clusters, in the background.
type multiRun struct {
	stdout, stderr *lockedBuffer
	cancel         context.CancelCauseFunc
	done           chan podsync.Outcome
}

// startMulti starts a run over clusters, with --until ready when until is
// set, and the output flags args.
func startMulti(t *testing.T, cfgEdit func(*podsync.Config), until bool, clusters []podsync.Cluster, args ...string) *multiRun {
	t.Helper()
	r := &multiRun{stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan podsync.Outcome, 1)}
	pf := get.NewGetPrintFlags()
	c := &cobra.Command{}
	pf.AddFlags(c)
	if err := c.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cl := range clusters {
		names = append(names, cl.Name)
	}
	w, err := output.New(output.Options{PrintFlags: pf, Contexts: names, Out: r.stdout})
	if err != nil {
		t.Fatal(err)
	}
	flags := check.Flags{MinPods: check.Unset, MaxRestarts: check.Unset}
	if until {
		flags.Until, flags.UntilSet = "ready", true
	}
	spec, err := flags.Spec()
	if err != nil {
		t.Fatal(err)
	}
	cfg := podsync.Config{
		Scope:  podsync.Scope{Namespace: "a", LabelSelector: "app=sim"},
		Output: w, Stdout: r.stdout, ErrOut: r.stderr, JSONSummary: len(args) > 1 && args[1] == "json",
		Check: spec, Workers: 2, MaxRetries: 5,
	}
	if cfgEdit != nil {
		cfgEdit(&cfg)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	r.cancel = cancel
	t.Cleanup(func() { cancel(nil) })
	go func() { r.done <- podsync.Run(ctx, cfg, clusters...) }()
	return r
}

// waitOut waits, in a synctest bubble, until stdout matches pattern with
// every goroutine of the bubble waiting. The bubble's clock moves on only
// while it does not match, for what waits on it (a reflector's back-off).
func (r *multiRun) waitOut(t *testing.T, pattern string) {
	t.Helper()
	re := regexp.MustCompile(pattern)
	deadline := time.Now().Add(30 * time.Second)
	for synctest.Wait(); !re.MatchString(r.stdout.String()); synctest.Wait() {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in stdout:\n%s\nstderr:\n%s", pattern, r.stdout, r.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wantOut requires stdout to match pattern, once the run has ended.
func (r *multiRun) wantOut(t *testing.T, pattern string) {
	t.Helper()
	if !regexp.MustCompile(pattern).MatchString(r.stdout.String()) {
		t.Errorf("no %q in stdout:\n%s\nstderr:\n%s", pattern, r.stdout, r.stderr)
	}
}

func (r *multiRun) outcome(t *testing.T) podsync.Outcome {
	t.Helper()
	select {
	case out := <-r.done:
		return out
	case <-time.After(30 * time.Second):
		t.Fatalf("the run did not end\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	return podsync.Outcome{}
}

func simCluster(name string, s *sim) podsync.Cluster {
	return podsync.Cluster{Name: name, Source: s.source()}
}

// A cluster whose list does not answer delays none of the others' lines;
// its own initial list prints as a block once it is in.
func TestContextsSlowClusterDelaysNoOther(t *testing.T) {
	synctest.Test(t, testContextsSlowClusterDelaysNoOther)
}

func testContextsSlowClusterDelaysNoOther(t *testing.T) {
	slow, fast := newSim(true), newSim(true)
	slow.put(newSimPod("a", "web-1", 1, runningReady, ""))
	fast.put(newSimPod("a", "web-1", 1, creating, ""))
	release := make(chan struct{})
	held := &source.Source{
		List: func(ctx context.Context, o metav1.ListOptions, call source.Call) (*source.PodRowList, error) {
			<-release
			return slow.list(ctx, o, call)
		},
		Watch: slow.watch,
	}
	r := startMulti(t, nil, false, []podsync.Cluster{{Name: "slow", Source: held}, simCluster("fast", fast)})
	r.waitOut(t, `(?m)^EVENT\s+CONTEXT\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+CHANGES\nSYNC\s+fast\s+web-1\s+0/1\s+ContainerCreating\s`)
	fast.put(newSimPod("a", "web-1", 1, runningReady, ""))
	r.waitOut(t, `(?m)^UPDATE\s+fast\s+web-1\s+1/1\s+Running\s.*STATUS:ContainerCreating→Running`)
	if strings.Contains(r.stdout.String(), "slow") {
		t.Fatalf("the slow cluster printed before its list:\n%s", r.stdout)
	}
	close(release)
	r.waitOut(t, `(?m)^SYNC\s+slow\s+web-1\s+1/1\s+Running\s+0\s+\S+$`)
	slow.put(newSimPod("a", "web-1", 1, crashLooping, ""))
	r.waitOut(t, `(?m)^UPDATE\s+slow\s+web-1\s+0/1\s+CrashLoopBackOff\s`)
	r.cancel(podsync.ErrTimeout)
	if out := r.outcome(t); out.Verdict != podsync.Done {
		t.Errorf("outcome %+v, want done", out)
	}
}

// The check is met only once it is met in every cluster, and the summary
// has a line per cluster.
func TestContextsGateMetEverywhere(t *testing.T) { synctest.Test(t, testContextsGateMetEverywhere) }

func testContextsGateMetEverywhere(t *testing.T) {
	a, b := newSim(true), newSim(true)
	a.put(newSimPod("a", "web-1", 1, runningReady, ""))
	b.put(newSimPod("a", "web-1", 1, runningNotReady, ""))
	r := startMulti(t, nil, true, []podsync.Cluster{simCluster("east", a), simCluster("west", b)})
	r.waitOut(t, `(?m)^SYNC\s+west\s+web-1\s+0/1\s+Running\s`)
	r.waitOut(t, `(?m)^SYNC\s+east\s+web-1\s+1/1\s+Running\s`)
	synctest.Wait()
	select {
	case out := <-r.done:
		t.Fatalf("the run ended while west was not ready: %+v\n%s", out, r.stderr)
	default:
	}
	b.put(newSimPod("a", "web-1", 1, runningReady, ""))
	out := r.outcome(t)
	if out.Verdict != podsync.Met || out.ExitCode() != podsync.ExitOK {
		t.Fatalf("outcome %+v, want met\n%s", out, r.stderr)
	}
	wantStderr(t, r.stderr.String(), "Reason:   met in all 2 contexts\n",
		"Contexts: east  met  1 pod  all 1 matching pods satisfy ready\n"+
			"          west  met  1 pod  all 1 matching pods satisfy ready\n"+
			"Pods:     2 matched (Running 2)\n")
}

// A failure in one cluster fails the check at once, naming the cluster,
// while the other is still pending; its pod is explained with its context.
func TestContextsFailureInOneFailsAtOnce(t *testing.T) {
	synctest.Test(t, testContextsFailureInOneFailsAtOnce)
}

func testContextsFailureInOneFailsAtOnce(t *testing.T) {
	a, b := newSim(false), newSim(false)
	a.put(newSimPod("a", "web-1", 1, runningNotReady, ""))
	b.put(newSimPod("a", "web-1", 1, runningReady, ""))
	r := startMulti(t, nil, true, []podsync.Cluster{simCluster("east", a), simCluster("west", b)}, "-o", "json")
	r.waitOut(t, `"type":"SYNC","context":"west"`)
	r.waitOut(t, `"type":"SYNC","context":"east"`)
	b.put(newSimPod("a", "web-1", 1, crashLooping, ""))
	out := r.outcome(t)
	if out.Verdict != podsync.Failed || out.ExitCode() != podsync.ExitFailed {
		t.Fatalf("outcome %+v, want failed\n%s", out, r.stderr)
	}
	wantStderr(t, r.stderr.String(),
		"Reason:   context west: pod a/web-1: container \"app\" is CrashLoopBackOff: back-off\n",
		"Contexts: east  not met  1 pod  1 of 1 matching pods do not satisfy ready\n"+
			"          west  failed   1 pod  pod a/web-1: container \"app\" is CrashLoopBackOff: back-off\n",
		"Pod a/web-1 in context west is not satisfied:",
		"Pod a/web-1 in context east is not satisfied:",
		`"contexts":[{"name":"east","verdict":"not met","pods":1,"reason":"1 of 1 matching pods do not satisfy ready"},{"name":"west","verdict":"failed","pods":1,`)
	r.waitOut(t, `"type":"UPDATE","context":"west"`)
	if stderr := r.stderr.String(); strings.Index(stderr, "in context west is not") > strings.Index(stderr, "in context east is not") {
		t.Errorf("the failed context's pods are not explained first:\n%s", stderr)
	}
}

func wantStderr(t *testing.T, stderr string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(stderr, p) {
			t.Errorf("stderr lacks %q:\n%s", p, stderr)
		}
	}
}

// closedCluster is a cluster whose API server refuses connections.
func closedCluster(t *testing.T, name string) podsync.Cluster {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := "http://" + l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	clients, err := podsync.NewClients(&rest.Config{Host: host})
	if err != nil {
		t.Fatal(err)
	}
	return podsync.Cluster{Name: name, Clients: clients}
}

// A cluster that cannot be used at start ends the run with exit 1 naming
// it; with --skip-unavailable the run goes on without it, says so once,
// and a check counts it as failed.
func TestContextsUnavailableAtStart(t *testing.T) {
	skip := func(c *podsync.Config) { c.SkipUnavailable = true }
	ready := func() podsync.Cluster {
		s := newSim(true)
		s.put(newSimPod("a", "web-1", 1, runningReady, ""))
		return simCluster("up", s)
	}
	t.Run("exit 1", func(t *testing.T) {
		r := startMulti(t, nil, true, []podsync.Cluster{ready(), closedCluster(t, "down")})
		out := r.outcome(t)
		if out.ExitCode() != podsync.ExitCluster || !regexp.MustCompile(`^context down: list pods at http://127\.0\.0\.1:\d+: .*connection refused`).MatchString(out.Err.Error()) {
			t.Errorf("outcome %+v (%v), want exit 1 naming the context", out, out.Err)
		}
	})
	t.Run("skipped, check failed", func(t *testing.T) {
		r := startMulti(t, skip, true, []podsync.Cluster{ready(), closedCluster(t, "down")})
		out := r.outcome(t)
		if out.Verdict != podsync.Failed {
			t.Fatalf("outcome %+v, want failed\n%s", out, r.stderr)
		}
		stderr := r.stderr.String()
		if n := strings.Count(stderr, "warning: context down: unavailable, going on without it (--skip-unavailable): list pods at http://127.0.0.1:"); n != 1 {
			t.Errorf("the skip said %d times, want once:\n%s", n, stderr)
		}
		wantStderr(t, stderr, "Reason:   context down: unavailable: list pods at ",
			"Contexts: up    met     1 pod   all 1 matching pods satisfy ready\n          down  failed  0 pods  unavailable: list pods at ")
		r.wantOut(t, `(?m)^SYNC\s+up\s+web-1\s`)
	})
	t.Run("skipped, plain --once", func(t *testing.T) {
		r := startMulti(t, func(c *podsync.Config) { c.SkipUnavailable, c.Once = true, true }, false, []podsync.Cluster{ready(), closedCluster(t, "down")})
		if out := r.outcome(t); out.ExitCode() != podsync.ExitOK {
			t.Errorf("outcome %+v, want exit 0\n%s", out, r.stderr)
		}
		r.wantOut(t, `(?m)^SYNC\s+up\s+web-1\s`)
	})
	t.Run("none left", func(t *testing.T) {
		r := startMulti(t, skip, false, []podsync.Cluster{closedCluster(t, "x"), closedCluster(t, "y")})
		out := r.outcome(t)
		if out.ExitCode() != podsync.ExitCluster || !strings.HasPrefix(out.Err.Error(), "no context can be used: context ") {
			t.Errorf("outcome %+v (%v), want exit 1", out, out.Err)
		}
	})
}

// A failure ends the check at once, also while another cluster's list is
// not in: that cluster's line says so rather than judging what it lacks.
func TestContextsFailureBeforeAnotherListed(t *testing.T) {
	synctest.Test(t, testContextsFailureBeforeAnotherListed)
}

func testContextsFailureBeforeAnotherListed(t *testing.T) {
	slow, failing := newSim(true), newSim(true)
	failing.put(newSimPod("a", "web-1", 1, crashLooping, ""))
	release := make(chan struct{})
	defer close(release)
	held := &source.Source{
		List: func(ctx context.Context, o metav1.ListOptions, call source.Call) (*source.PodRowList, error) {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return slow.list(ctx, o, call)
		},
		Watch: slow.watch,
	}
	r := startMulti(t, nil, true, []podsync.Cluster{{Name: "slow", Source: held}, simCluster("failing", failing)})
	if out := r.outcome(t); out.Verdict != podsync.Failed {
		t.Fatalf("outcome %+v, want failed\n%s", out, r.stderr)
	}
	wantStderr(t, r.stderr.String(),
		"Contexts: slow     not met  0 pods  the initial list of pods was not complete yet\n"+
			"          failing  failed   1 pod   pod a/web-1: container \"app\" is CrashLoopBackOff: back-off\n")
	r.waitOut(t, `(?m)^SYNC\s+failing\s+web-1\s+0/1\s+CrashLoopBackOff\s`)
}

// --sort-by orders each cluster's initial list within its own block, and
// the one list of a single cluster as before.
func TestContextsSortBy(t *testing.T) {
	filled := func() *sim {
		s := newSim(false)
		for name, extra := range map[string]string{"p1": "3", "p2": "1", "p3": "2"} {
			s.put(newSimPod("a", name, 1, runningReady, extra))
		}
		return s
	}
	sortBy := func(c *podsync.Config) { c.Once, c.SortBy = true, "{.metadata.annotations.extra}" }
	r := startMulti(t, sortBy, false, []podsync.Cluster{simCluster("", filled())}, "-o", "name")
	if out := r.outcome(t); out.ExitCode() != podsync.ExitOK {
		t.Fatalf("outcome %+v\n%s", out, r.stderr)
	}
	if got, want := r.stdout.String(), "pod/p2 synced\npod/p3 synced\npod/p1 synced\n"; got != want {
		t.Errorf("one cluster: got %q, want %q", got, want)
	}
	r = startMulti(t, sortBy, false, []podsync.Cluster{simCluster("east", filled()), simCluster("west", filled())}, "-o", "name")
	if out := r.outcome(t); out.ExitCode() != podsync.ExitOK {
		t.Fatalf("outcome %+v\n%s", out, r.stderr)
	}
	east := "east pod/p2 synced\neast pod/p3 synced\neast pod/p1 synced\n"
	west := strings.ReplaceAll(east, "east", "west")
	if got := r.stdout.String(); got != east+west && got != west+east {
		t.Errorf("two clusters: got %q, want each block sorted", got)
	}
}

// A check that fails on a page of the initial list, before the informer
// has the whole list, still explains the pod, from the page; with several
// clusters, naming its context.
func TestFailureOnAFirstPageIsExplained(t *testing.T) {
	for _, names := range [][]string{{""}, {"east", "west"}} {
		var clusters []podsync.Cluster
		for _, name := range names {
			s := newSim(true)
			s.put(newSimPod("a", "web-1", 1, crashLooping, ""))
			page, _ := s.snapshot()
			page.Continue = "more"
			halfway := &source.Source{
				List: func(ctx context.Context, _ metav1.ListOptions, call source.Call) (*source.PodRowList, error) {
					call.ObservePage(page)
					<-ctx.Done() // the next page never comes
					return nil, ctx.Err()
				},
				Watch: s.watch,
			}
			clusters = append(clusters, podsync.Cluster{Name: name, Source: halfway})
		}
		r := startMulti(t, nil, true, clusters)
		if out := r.outcome(t); out.Verdict != podsync.Failed {
			t.Fatalf("%q: outcome %+v, want failed\n%s", names, out, r.stderr)
		}
		want := "Pod a/web-1 is not satisfied:\n  Phase:  Running\n"
		if len(names) > 1 {
			want = "Pod a/web-1 in context " // whichever failed first
		}
		wantStderr(t, r.stderr.String(), want, "Container app: waiting (CrashLoopBackOff: back-off)")
	}
}
