package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// message is one printed message, read from a table or a JSON line.
type message struct {
	event, name, count string
	// terminating: the pod is being deleted. Deleting even with a grace
	// period of 0 is two changes on the API server: the deletionTimestamp
	// is set, then the pod is removed; podsync reports an UPDATE and a
	// GONE, or just GONE when both arrive before a worker takes the pod.
	terminating bool
	rv          int64 // JSON only
}

func (m message) String() string { return m.event + " " + m.name + " count=" + m.count }

// tableMessage reads a line of `kubectl podsync -L count` for a held pod:
// EVENT NAME READY STATUS RESTARTS AGE COUNT [CHANGES] (label columns come
// after kubectl's, CHANGES last).
func tableMessage(line string) (message, bool) {
	f := strings.Fields(line)
	if len(f) < 7 || f[0] == "EVENT" {
		return message{}, false
	}
	return message{event: f[0], name: f[1], count: f[6], terminating: f[3] == "Terminating"}, true
}

// jsonMessage reads a line of `kubectl podsync -o json`.
func jsonMessage(line string) (message, bool) {
	var ev struct {
		Type   string     `json:"type"`
		Object corev1.Pod `json:"object"`
	}
	if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Type == "" {
		return message{}, false
	}
	rv, _ := strconv.ParseInt(ev.Object.ResourceVersion, 10, 64)
	return message{event: ev.Type, name: ev.Object.Name, count: ev.Object.Labels[counterKey],
		terminating: ev.Object.DeletionTimestamp != nil, rv: rv}, true
}

// watched is one podsync stream behind its own expiry proxy.
type watched struct {
	name  string
	s     *harness.Stream
	proxy *expiryProxy
	parse func(string) (message, bool)
}

// messages are the stream's messages so far, without resourceVersions
// and without the UPDATE that may announce a deletion (see message).
func (w *watched) messages() []message {
	var out []message
	for _, l := range w.s.Lines() {
		if m, ok := w.parse(l); ok && (m.event != "UPDATE" || !m.terminating) {
			m.rv, m.terminating = 0, false
			out = append(out, m)
		}
	}
	return out
}

// terminatingUpdates counts, per pod, the UPDATEs that announce a
// deletion: there may be one at most.
func (w *watched) terminatingUpdates() map[string]int {
	out := map[string]int{}
	for _, l := range w.s.Lines() {
		if m, ok := w.parse(l); ok && m.event == "UPDATE" && m.terminating {
			out[m.name]++
		}
	}
	return out
}

// Watches end every 5-10 s (the API server's --min-request-timeout=5
// decides, since the proxy removes the reflector's own timeoutSeconds).
// Over ~30 changes spread across several expiries, a table stream and a
// JSON stream must each print exactly the expected messages: none
// missing, none twice, and no relist or connection note, since an expired
// watch is resumed where it stopped.
func TestWatchesExpire(t *testing.T) {
	tc := sharedCluster(t)
	ns := tc.Namespace(t)
	admin, err := tc.Cluster.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	createPod(t, tc.cs, ns, newPod("p0", true, nil))
	streams := []*watched{
		{name: "table", parse: tableMessage},
		{name: "json", parse: jsonMessage},
	}
	args := map[string][]string{"table": {"-L", counterKey}, "json": {"-o", "json"}}
	for _, w := range streams {
		w.proxy = newExpiryProxy(t, admin)
		kubeconfig := writeKubeconfig(t, w.proxy.srv.URL, w.proxy.caPEM(), &clientcmdapi.AuthInfo{}, ns)
		w.s = tc.StartEnv(t, []string{"KUBECONFIG=" + kubeconfig}, args[w.name]...)
	}
	want := []message{{event: "SYNC", name: "p0", count: "0"}}
	awaitAll(t, streams, want)
	began := time.Now()
	want = runExpirySteps(t, tc, ns, streams, want)
	// Stay through one more expiry of every stream: a duplicate would come
	// with a resumed watch.
	for _, w := range streams {
		n := w.proxy.watches.Load()
		harness.Eventually(t, time.Minute, harness.Text(w.name+" stream's watch to expire once more"),
			func() bool { return w.proxy.watches.Load() > n })
	}
	time.Sleep(2 * time.Second)
	elapsed := time.Since(began)
	for _, w := range streams {
		got := w.messages()
		if !slices.Equal(got, want) {
			t.Errorf("%s stream printed %d messages, want exactly these %d:\n got %v\nwant %v", w.name, len(got), len(want), got, want)
		}
		for pod, n := range w.terminatingUpdates() {
			if n > 1 {
				t.Errorf("%s stream: %d UPDATEs announce the deletion of %s, want at most 1", w.name, n, pod)
			}
		}
		watches, lists, relists := w.proxy.watches.Load(), w.proxy.lists.Load(), w.proxy.relists.Load()
		t.Logf("%s stream: %d watch requests and %d list requests (%d after the first watch) in %s",
			w.name, watches, lists, relists, elapsed.Round(time.Second))
		if watches < 4 {
			t.Errorf("%s stream: only %d watch requests in %s: the watches did not expire as arranged", w.name, watches, elapsed)
		}
		if relists != 0 {
			t.Errorf("%s stream: %d list requests after the first watch: an expired watch should be resumed, not relisted", w.name, relists)
		}
		r := w.s.Stop(syscall.SIGINT)
		if r.Code != 130 {
			t.Errorf("%s stream: exit code %d after SIGINT, want 130\n%s", w.name, r.Code, r)
		}
		if other := linesOtherThan(r.Stderr); len(other) > 0 || strings.Contains(r.Stderr, "podsync:") || !strings.HasPrefix(r.Stderr, "Verdict:  interrupted (exit 130)") {
			t.Errorf("%s stream: stderr should hold only the summary\n%s", w.name, r.Stderr)
		}
	}
}

// runExpirySteps makes one change a second, waiting each time until both
// streams show it: creations (ADD), counter bumps (UPDATE) and deletions
// (GONE, showing the last count).
func runExpirySteps(t *testing.T, tc *testCluster, ns string, streams []*watched, want []message) []message {
	t.Helper()
	live := []string{"p0"}
	counts := map[string]int{"p0": 0}
	for i := 1; i <= 30; i++ {
		var m message
		switch {
		case i%3 == 0:
			name := fmt.Sprintf("p%d", i)
			createPod(t, tc.cs, ns, newPod(name, true, nil))
			live, counts[name] = append(live, name), 0
			m = message{event: "ADD", name: name, count: "0"}
		case i%6 == 5 && len(live) > 1:
			name := live[0]
			live = live[1:]
			harness.DeleteNow(t, tc.cs, ns, name)
			m = message{event: "GONE", name: name, count: strconv.Itoa(counts[name])}
		default:
			name := live[i%len(live)]
			counts[name]++
			if _, err := setCounter(context.Background(), tc.cs, ns, name, counts[name]); err != nil {
				t.Fatal(err)
			}
			m = message{event: "UPDATE", name: name, count: strconv.Itoa(counts[name])}
		}
		want = append(want, m)
		awaitAll(t, streams, want)
		time.Sleep(time.Second)
	}
	return want
}

// awaitAll waits until every stream has printed as many messages as want
// holds; the test compares their content at the end.
func awaitAll(t *testing.T, streams []*watched, want []message) {
	t.Helper()
	for _, w := range streams {
		harness.Eventually(t, time.Minute, func() string {
			return fmt.Sprintf("%s stream to print %v (message %d); %s", w.name, want[len(want)-1], len(want), w.s.Dump())
		}, func() bool { return len(w.messages()) >= len(want) })
		alive(t, w.s)
	}
}
