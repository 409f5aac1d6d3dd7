package faults

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// The network between podsync and the API server is cut (a TCP proxy
// drops every connection and refuses new ones) for so long that etcd
// compacts away the resourceVersion podsync's watch would resume from.
// The API server runs without a watch cache for pods, so the resumed
// watch is refused as expired and podsync must relist; the relist must
// still report every change made during the cut, the deletion included
// (GONE with the last state podsync knew). A pod deleted and created again
// under the same name during the cut (as a StatefulSet's web-0 is) is a
// new pod: GONE for the old one, then ADD for the new one, never one
// UPDATE, though the relist hands both over as one update.
func TestConnectionCutPastCompaction(t *testing.T) {
	tc := newCluster(t, "--etcd-compaction-interval=10s", "--watch-cache-sizes=pods#0")
	ns := tc.Namespace(t)
	proxy := newCutProxy(t, strings.TrimPrefix(tc.Cluster.Server, "https://"))
	admin, ca := tc.adminAuth(t)
	kubeconfig := writeKubeconfig(t, proxy.URL(), ca, admin, ns)
	createPod(t, tc.cs, ns, newPod("phoenix", false, map[string]string{"app": "phoenix"}))
	harness.WaitReady(t, tc.cs, ns, "phoenix")
	// -v=6 logs each request, so the relist can be counted.
	p := startWithTwoPods(t, tc, ns, []string{"KUBECONFIG=" + kubeconfig}, "-v=6")
	s := p.table
	s.WaitLine(`^SYNC\s+phoenix\s`, time.Minute)
	p.names.WaitLine(`^pod/phoenix synced$`, time.Minute)
	listsBefore := listRequests(s.Stderr(), ns)

	cut := time.Now()
	proxy.Cut()
	p.waitLost()
	// Cut off, podsync cannot have seen anything newer than this.
	list, err := tc.cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	changeThreePods(t, tc.cs, ns)
	harness.DeleteNow(t, tc.cs, ns, "phoenix")
	createPod(t, tc.cs, ns, newPod("phoenix", false, map[string]string{"app": "phoenix", "generation": "2"}))
	waitCompacted(t, tc.cs, ns, list.ResourceVersion)
	p.alive(t)
	t.Logf("etcd compacted past the cut's resourceVersion %s after %s", list.ResourceVersion, time.Since(cut).Round(time.Second))
	restored := time.Now()
	proxy.Restore()
	p.expectThreeChanges(t)
	t.Logf("all changes reported %s after the network came back (cut for %s)",
		time.Since(restored).Round(time.Millisecond), restored.Sub(cut).Round(time.Second))
	s.WaitStderr(`(?m)^podsync: reconnected to the API server after .*; changes made meanwhile follow$`, time.Minute)
	expectRecreated(t, p)
	if lists := listRequests(s.Stderr(), ns); lists <= listsBefore {
		t.Errorf("podsync made %d successful list requests before the cut and %d in all: it did not relist\n%s", listsBefore, lists, s.Dump())
	}
	p.stillWatching(t, tc, ns)
	rs := p.stop()
	if r := rs[0]; r.Code != 143 || !strings.Contains(r.Stderr, "Verdict:  interrupted (exit 143)") {
		t.Errorf("want the summary and exit 143 after SIGTERM\n%s", r)
	}
	if lost, back := connectionNotes(rs[0].Stderr); lost != 1 || back != 1 {
		t.Errorf("stderr says %d times that the connection was lost and %d times that it is back, want once each\n%s", lost, back, rs[0].Stderr)
	}
	expectOneOutage(t, rs[1], 1)
}

// expectRecreated: phoenix, deleted and created again during the cut, is
// GONE then ADD in both streams, once each, and never an UPDATE.
func expectRecreated(t *testing.T, p pair) {
	t.Helper()
	p.table.WaitLine(`^ADD\s+phoenix\s`, 3*time.Minute)
	p.names.WaitLine(`^pod/phoenix added$`, 3*time.Minute)
	var table, names []string
	for _, l := range p.table.Lines() {
		if f := strings.Fields(l); len(f) > 1 && f[1] == "phoenix" {
			table = append(table, f[0])
		}
	}
	for _, l := range p.names.Lines() {
		if strings.HasPrefix(l, "pod/phoenix ") {
			names = append(names, strings.TrimPrefix(l, "pod/phoenix "))
		}
	}
	if strings.Join(table, " ") != "SYNC GONE ADD" || strings.Join(names, " ") != "synced gone added" {
		t.Errorf("phoenix, recreated during the cut: table %v, names %v; want SYNC GONE ADD in both", table, names)
	}
}

// listRequests counts the successful pod list requests (not watches) in
// ns that podsync logged at -v=6.
func listRequests(stderr, ns string) int {
	rx := regexp.MustCompile(`url="[^"]*/api/v1/namespaces/` + regexp.QuoteMeta(ns) + `/pods\?[^"]*" status="200 OK"`)
	n := 0
	for _, l := range strings.Split(stderr, "\n") {
		if rx.MatchString(l) && !strings.Contains(l, "watch=true") {
			n++
		}
	}
	return n
}

// waitCompacted waits until a watch of ns from resourceVersion rv is
// refused as expired: etcd has compacted that revision away.
func waitCompacted(t *testing.T, cs kubernetes.Interface, ns, rv string) {
	t.Helper()
	harness.Eventually(t, 3*time.Minute, harness.Text("etcd to compact past resourceVersion "+rv), func() bool {
		return watchExpired(cs, ns, rv)
	})
}

func watchExpired(cs kubernetes.Interface, ns, rv string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
	}
	defer w.Stop()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok || ev.Type != watch.Error {
			return false // it replayed a change after rv: not compacted yet
		}
		err := apierrors.FromObject(ev.Object)
		return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
	case <-ctx.Done():
		return false
	}
}
