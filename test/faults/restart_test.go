package faults

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// The API server podsync talks to is SIGKILLed. While it is down, pods
// are created, changed and deleted through a second API server on the same
// etcd; then the first comes back. podsync must say once that it lost the
// connection and once that it is back, report all three changes (the
// deleted pod with its last known state), and keep watching.
func TestAPIServerKilledAndRestarted(t *testing.T) {
	tc := newCluster(t)
	kubeconfigB, err := tc.Cluster.StartAPIServer(context.Background(), "kube-apiserver-b")
	if err != nil {
		t.Fatal(err)
	}
	cfgB, err := clientcmd.BuildConfigFromFlags("", kubeconfigB)
	if err != nil {
		t.Fatal(err)
	}
	csB, err := adminClient(cfgB)
	if err != nil {
		t.Fatal(err)
	}
	ns := tc.Namespace(t)
	p := startWithTwoPods(t, tc, ns, nil)

	if err := tc.Cluster.Kill(localcluster.APIServer); err != nil {
		t.Fatal(err)
	}
	p.waitLost()
	changeThreePods(t, csB, ns)
	time.Sleep(2 * time.Second) // down a little longer: podsync keeps retrying meanwhile
	p.alive(t)
	restarted := time.Now()
	if err := tc.Cluster.Restart(localcluster.APIServer); err != nil {
		t.Fatal(err)
	}
	p.expectThreeChanges(t)
	t.Logf("all changes reported %s after the restart began", time.Since(restarted).Round(time.Millisecond))
	p.stillWatching(t, tc, ns)
	for _, r := range p.stop() {
		expectOneOutage(t, r, 1)
	}
}

// etcd is killed under the API server and started again. podsync must
// keep running (the API server keeps its connection to podsync or loses
// it; either way podsync says so at most once) and report the changes made
// once etcd is back.
func TestEtcdRestarted(t *testing.T) {
	tc := newCluster(t)
	ns := tc.Namespace(t)
	p := startWithTwoPods(t, tc, ns, nil)

	if err := tc.Cluster.Kill(localcluster.Etcd); err != nil {
		t.Fatal(err)
	}
	// Long enough for the API server's etcd clients, watch cache and
	// readiness check to see the loss.
	time.Sleep(15 * time.Second)
	p.alive(t)
	if err := tc.Cluster.Restart(localcluster.Etcd); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	// The API server reconnects to etcd by itself; writes work once it has.
	harness.Eventually(t, 2*time.Minute, harness.Text("the API server to accept writes again"), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := tc.cs.CoreV1().Pods(ns).Create(ctx, newPod("born", false, map[string]string{"app": "born"}), metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err)
	})
	t.Logf("the API server accepted writes %s after etcd was restarted", time.Since(back).Round(time.Millisecond))
	harness.SetLabel(t, tc.cs, ns, "keep", "changed", "yes")
	harness.DeleteNow(t, tc.cs, ns, "doomed")
	p.expectThreeChanges(t)
	p.stillWatching(t, tc, ns)
	for _, r := range p.stop() {
		lost, _ := connectionNotes(r.Stderr)
		t.Logf("podsync's connection notes: %d (0 when its watch stayed open)", lost)
		expectOneOutage(t, r, lost)
	}
}

// pair is podsync run twice on the same pods, once for each source: a
// table stream (server-side tables) and an -o name stream (plain pods).
type pair struct {
	table, names *harness.Stream
}

// startWithTwoPods creates the running pods keep and doomed in ns and
// starts both streams with extraEnv, waiting for their SYNC messages. The
// table stream gets tableArgs too.
func startWithTwoPods(t *testing.T, tc *testCluster, ns string, extraEnv []string, tableArgs ...string) pair {
	t.Helper()
	for _, name := range []string{"keep", "doomed"} {
		createPod(t, tc.cs, ns, newPod(name, false, map[string]string{"app": name}))
	}
	harness.WaitReady(t, tc.cs, ns, "keep", "doomed")
	p := pair{
		table: tc.StartEnv(t, extraEnv, append([]string{"-n", ns}, tableArgs...)...),
		names: tc.StartEnv(t, extraEnv, "-n", ns, "-o", "name"),
	}
	p.table.WaitLine(`^SYNC\s+keep\s+1/1\s+Running\s`, 2*time.Minute)
	p.table.WaitLine(`^SYNC\s+doomed\s+1/1\s+Running\s`, 2*time.Minute)
	p.names.WaitLines(`^pod/(keep|doomed) synced$`, 2, 2*time.Minute)
	return p
}

func (p pair) each(f func(*harness.Stream)) {
	f(p.table)
	f(p.names)
}

func (p pair) alive(t *testing.T) {
	t.Helper()
	p.each(func(s *harness.Stream) { alive(t, s) })
}

// waitLost waits until both streams said that the connection was lost.
func (p pair) waitLost() {
	p.each(func(s *harness.Stream) {
		s.WaitStderr(`(?m)^podsync: lost the connection to the API server \(.*\); retrying$`, 2*time.Minute)
	})
}

func (p pair) stop() []harness.Result {
	return []harness.Result{p.table.Stop(syscall.SIGTERM), p.names.Stop(syscall.SIGTERM)}
}

// changeThreePods creates born, labels keep and deletes doomed.
func changeThreePods(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	createPod(t, cs, ns, newPod("born", false, map[string]string{"app": "born"}))
	harness.SetLabel(t, cs, ns, "keep", "changed", "yes")
	harness.DeleteNow(t, cs, ns, "doomed")
}

// expectThreeChanges waits for the messages of changeThreePods in both
// streams, ADD and GONE exactly once. In the table, doomed is GONE with
// its last known state: the READY and STATUS of the message before
// (Running when podsync missed the deletion and learnt of it from a
// relist), or Terminating when podsync saw the deletion begin and the
// deletion came before a worker took the key, so that both became the one
// GONE message.
func (p pair) expectThreeChanges(t *testing.T) {
	t.Helper()
	s := p.table
	s.WaitLine(`^ADD\s+born\s`, 3*time.Minute)
	s.WaitLine(`^UPDATE\s+keep\s+1/1\s+Running\s.*metadata\.labels`, 3*time.Minute)
	gone := strings.Fields(s.WaitLine(`^GONE\s+doomed\s`, 3*time.Minute))
	var before []string
	for _, l := range s.Lines() {
		if f := strings.Fields(l); len(f) > 3 && f[1] == "doomed" && f[0] != "GONE" {
			before = f
		}
	}
	if len(before) == 0 || gone[2] != before[2] || (gone[3] != before[3] && gone[3] != "Terminating") {
		t.Errorf("GONE doomed shows %v, want the last state printed before it, %v, or Terminating", gone, before)
	}
	expectCounts(t, s, map[string]int{`^ADD\s+born\s`: 1, `^UPDATE\s+keep\s.*metadata\.labels`: 1, `^GONE\s+doomed\s`: 1, `^(SYNC|ADD)\s+doomed\s`: 1})
	for _, re := range []string{`^pod/born added$`, `^pod/keep updated$`, `^pod/doomed gone$`} {
		p.names.WaitLine(re, 3*time.Minute)
	}
	expectCounts(t, p.names, map[string]int{`^pod/born added$`: 1, `^pod/doomed gone$`: 1, `^pod/doomed (synced|added)$`: 1})
}

func expectCounts(t *testing.T, s *harness.Stream, want map[string]int) {
	t.Helper()
	for re, n := range want {
		if got := s.Count(re); got != n {
			t.Errorf("%d lines match %q, want %d; %s", got, re, n, s.Dump())
		}
	}
}

// stillWatching proves the streams are live after the fault: a change
// made now is reported.
func (p pair) stillWatching(t *testing.T, tc *testCluster, ns string) {
	t.Helper()
	p.alive(t)
	harness.DeleteNow(t, tc.cs, ns, "born")
	p.table.WaitLine(`^GONE\s+born\s`, 2*time.Minute)
	p.names.WaitLine(`^pod/born gone$`, 2*time.Minute)
}

// expectOneOutage checks how a stream stopped with SIGTERM ended: exit
// 143 after the summary, `lost` notes of a lost connection and as many of
// its return, and nothing else on stderr.
func expectOneOutage(t *testing.T, r harness.Result, lost int) {
	t.Helper()
	if r.Code != 143 {
		t.Errorf("exit code %d after SIGTERM, want 143\n%s", r.Code, r)
	}
	if !strings.Contains(r.Stderr, "Verdict:  interrupted (exit 143)") {
		t.Errorf("no summary on stderr\n%s", r)
	}
	t.Logf("podsync's stderr:\n%s", r.Stderr)
	gotLost, back := connectionNotes(r.Stderr)
	if gotLost != lost || back != lost || lost > 1 {
		t.Errorf("stderr says %d times that the connection was lost and %d times that it is back, want %d each (at most 1)\n%s", gotLost, back, lost, r)
	}
	if other := linesOtherThan(r.Stderr); len(other) > 0 {
		t.Errorf("unexpected stderr lines %q\n%s", other, r)
	}
}
