package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// Generous limits: the machine is shared and the plugin is built with -race.
const (
	runLimit  = 2 * time.Minute // one `kubectl podsync --once`
	lineLimit = 2 * time.Minute // one expected line of a stream
	podLimit  = 2 * time.Minute // a pod reaching a state
)

// once runs `kubectl podsync ARGS --once` and fails the test unless it ends
// with exit 0.
func once(t *testing.T, args ...string) harness.Result {
	t.Helper()
	r := env.Podsync(t, runLimit, append(args, "--once")...)
	if r.Code != 0 {
		t.Fatalf("kubectl podsync %s --once: want exit 0\n%s", strings.Join(args, " "), r)
	}
	return r
}

// table parses printed table text and fails the test if it is not aligned.
func table(t *testing.T, text string) harness.Table {
	t.Helper()
	tb, err := harness.ParseTable(text)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// names returns the NAME cells of a table, in order.
func names(t *testing.T, tb harness.Table) []string {
	t.Helper()
	col := tb.Column("NAME")
	if col < 0 {
		t.Fatalf("no NAME column in %v", tb.Header)
	}
	var out []string
	for _, r := range tb.Rows {
		out = append(out, r[col])
	}
	return out
}

// podStatus is what `kubectl get pod` shows in READY and STATUS.
func podStatus(t *testing.T, ns, name string) (ready, status string) {
	t.Helper()
	f := strings.Fields(env.Kubectl(t, "get", "pod", "-n", ns, name, "--no-headers"))
	if len(f) < 3 {
		return "", ""
	}
	return f[1], f[2]
}

// waitStatus waits until `kubectl get pod` shows READY and STATUS (ready ""
// accepts any READY).
func waitStatus(t *testing.T, ns, name, ready, status string) {
	t.Helper()
	var gotReady, gotStatus string
	harness.Eventually(t, podLimit, func() string {
		return fmt.Sprintf("pod %s/%s to be %s %s; it is %s %s", ns, name, ready, status, gotReady, gotStatus)
	}, func() bool {
		gotReady, gotStatus = podStatus(t, ns, name)
		return gotStatus == status && (ready == "" || gotReady == ready)
	})
}

// runningPod creates a one-container pod with the given labels and waits
// until it is Running and ready.
func runningPod(t *testing.T, ns, name string, labels map[string]string) {
	t.Helper()
	env.Apply(t, ns, podYAML(name, labels, ""))
	waitStatus(t, ns, name, "1/1", "Running")
}

// runningPods creates plain pods (label app=NAME) and waits until all of
// them are Running and ready.
func runningPods(t *testing.T, ns string, names ...string) {
	t.Helper()
	var docs []string
	for _, n := range names {
		docs = append(docs, podYAML(n, map[string]string{"app": n}, ""))
	}
	env.Apply(t, ns, strings.Join(docs, "---\n"))
	for _, n := range names {
		waitStatus(t, ns, n, "1/1", "Running")
	}
}

// podYAML is a one-container pod with labels and extra spec lines (indented
// two spaces, under spec:).
func podYAML(name string, labels map[string]string, spec string) string {
	var l strings.Builder
	if len(labels) > 0 {
		l.WriteString("  labels:\n")
		for k, v := range labels {
			fmt.Fprintf(&l, "    %s: %q\n", k, v)
		}
	}
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n" + l.String() +
		"spec:\n" + spec + "  containers:\n  - name: app\n    image: registry.example/app:1\n"
}

// label sets one label on a pod with kubectl.
func label(t *testing.T, ns, pod, kv string) {
	t.Helper()
	env.Kubectl(t, "label", "pod", "-n", ns, pod, kv, "--overwrite")
}

// event is one line of `-o json`.
type event struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
	Pod    corev1.Pod      `json:"-"`
	Line   string          `json:"-"`
}

// jsonEvent decodes one `-o json` line and checks its shape: one compact
// object with a type and a v1 Pod without managedFields.
func jsonEvent(t *testing.T, line string) event {
	t.Helper()
	var ev event
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		t.Fatalf("not one JSON object per line: %v\n%s", err, line)
	}
	if !strings.HasPrefix(line, `{"type":"`) || strings.Contains(line, "\n") || strings.Contains(line, `": `) {
		t.Errorf("not a compact {\"type\",\"object\"} line: %.200s", line)
	}
	if err := json.Unmarshal(ev.Object, &ev.Pod); err != nil {
		t.Fatalf("object is not a Pod: %v\n%s", err, line)
	}
	if ev.Pod.Kind != "Pod" || ev.Pod.APIVersion != "v1" {
		t.Errorf("object has kind %q apiVersion %q, want Pod v1", ev.Pod.Kind, ev.Pod.APIVersion)
	}
	if strings.Contains(string(ev.Object), "managedFields") {
		t.Errorf("managedFields printed: %.300s", line)
	}
	ev.Line = line
	return ev
}

// jsonEvents decodes every line of a `-o json` stream.
func jsonEvents(t *testing.T, lines []string) []event {
	t.Helper()
	var out []event
	for _, l := range lines {
		out = append(out, jsonEvent(t, l))
	}
	return out
}

// rv is a resourceVersion as a number: etcd's revisions order the changes
// of one pod (the API calls them opaque; this test cluster's are integers).
func rv(t *testing.T, p *corev1.Pod) int64 {
	t.Helper()
	n, err := strconv.ParseInt(p.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q of %s: %v", p.ResourceVersion, p.Name, err)
	}
	return n
}

// apiPod reads a pod with kubectl as JSON.
func apiPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	var p corev1.Pod
	if err := json.Unmarshal([]byte(env.KubectlOut(t, "get", "pod", "-n", ns, name, "-o", "json")), &p); err != nil {
		t.Fatalf("decode pod %s/%s: %v", ns, name, err)
	}
	return &p
}

// writeFile writes a file in the test's temp folder and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// count counts the lines matching re.
func count(lines []string, re string) int {
	rx := regexp.MustCompile(re)
	n := 0
	for _, l := range lines {
		if rx.MatchString(l) {
			n++
		}
	}
	return n
}

// noErrors fails the test if stderr reports an error or a warning.
func noErrors(t *testing.T, stderr string) {
	t.Helper()
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "error") || strings.HasPrefix(l, "warning") || strings.HasPrefix(l, "W1") || strings.HasPrefix(l, "E1") {
			t.Errorf("stderr reports a problem: %s\nstderr:\n%s", l, stderr)
		}
	}
}
