package contexts

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// These tests kill API servers, so they run alone (not in parallel); each
// leaves every cluster healthy.

// podsync-2's API server is SIGKILLed during the run. podsync says once
// that it lost that context and once that it is back; the other two
// contexts' messages keep flowing meanwhile; the changes made in podsync-2
// while it was down (through a second API server on its etcd) are all
// reported after the restart, and nothing is lost in any context.
func TestAPIServerKilledInOneContext(t *testing.T) {
	ns := namespace(t)
	cs := clusters(t)
	for _, c := range cs {
		createPod(t, c.cs, ns, pod("keep", nil))
		createPod(t, c.cs, ns, pod("doomed", nil))
	}
	for _, c := range cs {
		harness.WaitReady(t, c.cs, ns, "keep", "doomed")
	}
	down := env.Clusters[1]
	// Named after the namespace, and ended after the test, so that the
	// test can run again (-count) on the same clusters.
	nameB := "kube-apiserver-b-" + strings.Join(strings.SplitN(ns, "-", 3)[:2], "-")
	kubeconfigB, err := down.StartAPIServer(context.Background(), nameB)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = down.Kill(nameB) })
	cfgB, err := clientcmd.BuildConfigFromFlags("", kubeconfigB)
	if err != nil {
		t.Fatal(err)
	}
	viaB := client(t, cfgB)

	table := env.Start(t, "--context", all, "-n", ns)
	names := env.Start(t, "--context", all, "-n", ns, "-o", "name")
	table.WaitLines(`^SYNC\s+podsync-\d\s+(keep|doomed)\s+1/1\s+Running\s`, 6, 2*time.Minute)
	names.WaitLines(`^podsync-\d pod/(keep|doomed) synced$`, 6, 2*time.Minute)

	out := killAPIServer(t, 1)
	lost := `(?m)^podsync: lost the connection to the API server of context podsync-2 \(.*\); retrying$`
	table.WaitStderr(lost, 2*time.Minute)
	names.WaitStderr(lost, 2*time.Minute)

	// The others go on while podsync-2 is down.
	for _, c := range []cluster{cs[0], cs[2]} {
		start := time.Now()
		harness.SetLabel(t, c.cs, ns, "keep", "during", "outage")
		table.WaitLine(`^UPDATE\s+`+c.context+`\s+keep\s+1/1\s+Running\s+0\s+\S+\s+metadata\.labels$`, 30*time.Second)
		names.WaitLine(`^`+c.context+` pod/keep updated$`, 30*time.Second)
		t.Logf("%s's change reported %s after it was made, with podsync-2 down", c.context, time.Since(start).Round(time.Millisecond))
	}
	createPod(t, viaB, ns, pod("born", nil))
	harness.SetLabel(t, viaB, ns, "keep", "changed", "yes")
	harness.DeleteNow(t, viaB, ns, "doomed")
	time.Sleep(2 * time.Second) // down a little longer: podsync keeps retrying meanwhile

	out.restart()
	back := `(?m)^podsync: reconnected to the API server of context podsync-2 after \S+; changes made meanwhile follow$`
	for _, s := range []*harness.Stream{table, names} {
		s.WaitStderr(back, 2*time.Minute)
	}
	table.WaitLine(`^(ADD|UPDATE)\s+podsync-2\s+born\s`, time.Minute)
	table.WaitLine(`^UPDATE\s+podsync-2\s+keep\s`, time.Minute)
	table.WaitLine(`^GONE\s+podsync-2\s+doomed\s`, time.Minute)
	names.WaitLine(`^podsync-2 pod/born (added|updated)$`, time.Minute)
	names.WaitLine(`^podsync-2 pod/keep updated$`, time.Minute)
	names.WaitLine(`^podsync-2 pod/doomed gone$`, time.Minute)

	// Still watching everywhere after the outage.
	for _, c := range cs {
		harness.SetLabel(t, c.cs, ns, "keep", "after", "outage")
	}
	for _, c := range cs {
		table.WaitLines(`^UPDATE\s+`+c.context+`\s+keep\s+1/1\s+Running\s+0\s+\S+\s+metadata\.labels$`, 2, time.Minute)
		names.WaitLines(`^`+c.context+` pod/keep updated$`, 2, time.Minute)
	}
	for _, s := range []struct {
		stream *harness.Stream
		keep   string // a line reporting an update of keep in context %s
	}{{table, `^UPDATE\s+%s\s+keep\s`}, {names, `^%s pod/keep updated$`}} {
		r := s.stream.Stop(syscall.SIGTERM)
		wantExit(t, r, 143)
		if n := len(regexp.MustCompile(`(?m)^podsync: lost the connection`).FindAllString(r.Stderr, -1)); n != 1 {
			t.Errorf("%d lost-connection lines, want 1:\n%s", n, r.Stderr)
		}
		if n := len(regexp.MustCompile(`(?m)^podsync: reconnected`).FindAllString(r.Stderr, -1)); n != 1 {
			t.Errorf("%d reconnected lines, want 1:\n%s", n, r.Stderr)
		}
		for _, c := range []string{"podsync-1", "podsync-3"} {
			if n := harness.CountLines(r.Stdout, fmt.Sprintf(s.keep, c)); n != 2 {
				t.Errorf("%s: %d updates of keep, want 2 (nothing lost, nothing repeated)\n%s", c, n, r.Stdout)
			}
		}
		if n := harness.CountLines(r.Stdout, `doomed`); n != 4 {
			t.Errorf("%d lines about doomed, want 3 SYNC and 1 GONE\n%s", n, r.Stdout)
		}
	}
}

// podsync-3's API server is down at start: exit 1 naming the context;
// with --skip-unavailable the run goes on with the other two, says so
// once, and a gate counts podsync-3 as failed.
func TestUnreachableAtStart(t *testing.T) {
	ns := namespace(t)
	readyPodEverywhere(t, ns, "web")
	killAPIServer(t, 2)

	r := env.Podsync(t, time.Minute, "--context", all, "-n", ns, "--once")
	wantExit(t, r, 1)
	if !regexp.MustCompile(`^error: context podsync-3: list pods at https://127\.0\.0\.1:\d+: dial tcp 127\.0\.0\.1:\d+: connect: connection refused\n$`).MatchString(r.Stderr) {
		t.Errorf("stderr %q, want one line naming podsync-3", r.Stderr)
	}

	skipped := regexp.MustCompile(`(?m)^warning: context podsync-3: unavailable, going on without it \(--skip-unavailable\): list pods at https://127\.0\.0\.1:\d+: .*connection refused$`)
	r = env.Podsync(t, time.Minute, "--context", all, "-n", ns, "--once", "--skip-unavailable")
	wantExit(t, r, 0)
	wantLines(t, r.Stdout, `^SYNC\s+podsync-[12]\s+web\s+1/1\s+Running\s`, 2)
	if n := len(skipped.FindAllString(r.Stderr, -1)); n != 1 || strings.Count(r.Stderr, "\n") != 1 {
		t.Errorf("stderr %q, want the skip said once, alone", r.Stderr)
	}

	r = env.Podsync(t, time.Minute, "--context", all, "-n", ns, "--until", "ready", "--timeout", "30s", "--skip-unavailable", "-v=1")
	wantExit(t, r, 4)
	if n := len(skipped.FindAllString(r.Stderr, -1)); n != 1 {
		t.Errorf("the skip said %d times, want once\n%s", n, r)
	}
	wantStderr(t, r, "Verdict:  failed (exit 4)", "Reason:   context podsync-3: unavailable: list pods at https://127.0.0.1:",
		"Contexts: podsync-1  met     1 pod   all 1 matching pods satisfy ready\n"+
			"          podsync-2  met     1 pod   all 1 matching pods satisfy ready\n"+
			"          podsync-3  failed  0 pods  unavailable: list pods at https://127.0.0.1:")
	if took := harness.SinceClock(t, r); took > 20*time.Second {
		t.Errorf("the verdict waited %s: once the others are met it is known", took)
	}
}
