package e2e

// The contract's "Which pods" rows: -n and the kubeconfig's namespace, -A,
// -l, --field-selector and POD_NAME arguments.

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// -n picks one namespace; pods of other namespaces never show.
func TestNamespaceFlag(t *testing.T) {
	a, b := env.Namespace(t), env.Namespace(t)
	env.Apply(t, a, podYAML("in-a", nil, ""))
	runningPod(t, b, "in-b", nil)
	waitStatus(t, a, "in-a", "1/1", "Running")
	for ns, want := range map[string]string{a: "in-a", b: "in-b"} {
		r := once(t, "-n", ns)
		if got := names(t, table(t, r.Stdout)); !reflect.DeepEqual(got, []string{want}) {
			t.Errorf("-n %s lists %v, want [%s]\n%s", ns, got, want, r)
		}
	}
}

// --once that finds no pods says what `kubectl get pods` says, on stderr,
// and exits 0 with nothing on stdout.
func TestOnceFindsNoPods(t *testing.T) {
	ns := env.Namespace(t)
	none := "e2e=" + labelValue("none-"+t.Name())
	for _, args := range [][]string{{"-n", ns}, {"-A", "-l", none}} {
		want := env.Kubectl(t, slices.Concat([]string{"get", "pods"}, args)...)
		for _, output := range [][]string{nil, {"-o", "json"}} {
			r := once(t, slices.Concat(args, output)...)
			if r.Stdout != "" || r.Stderr != want {
				t.Errorf("%v %v: stdout %q, stderr %q; want nothing and kubectl's %q", args, output, r.Stdout, r.Stderr, want)
			}
		}
	}
}

// Without -n, the namespace of the kubeconfig's context is used, else
// "default"; -n wins over the context.
func TestNamespaceFromKubeconfig(t *testing.T) {
	a, b := env.Namespace(t), env.Namespace(t)
	env.Apply(t, a, podYAML("in-a", nil, ""))
	runningPod(t, b, "in-b", nil)
	waitStatus(t, a, "in-a", "1/1", "Running")
	withNS := filepath.Join(t.TempDir(), "kubeconfig")
	copyKubeconfig(t, withNS)
	env.Kubectl(t, "--kubeconfig", withNS, "config", "set-context", "--current", "--namespace", b)

	kc := []string{"KUBECONFIG=" + withNS}
	r := env.PodsyncEnv(t, runLimit, kc, "--once")
	if got := names(t, table(t, r.Stdout)); r.Code != 0 || !reflect.DeepEqual(got, []string{"in-b"}) {
		t.Errorf("context namespace %s: listed %v, want [in-b]\n%s", b, got, r)
	}
	r = env.PodsyncEnv(t, runLimit, kc, "--once", "-n", a)
	if got := names(t, table(t, r.Stdout)); r.Code != 0 || !reflect.DeepEqual(got, []string{"in-a"}) {
		t.Errorf("-n %s over the context's namespace: listed %v, want [in-a]\n%s", a, got, r)
	}

	// --kubeconfig and --context pick the file and the context (and so its
	// namespace) as in kubectl.
	minify := func(path string) string {
		return env.Kubectl(t, "--kubeconfig", withNS, "config", "view", "--minify", "-o", "jsonpath="+path)
	}
	env.Kubectl(t, "--kubeconfig", withNS, "config", "set-context", "in-a",
		"--cluster", minify("{.contexts[0].context.cluster}"), "--user", minify("{.contexts[0].context.user}"), "--namespace", a)
	r = once(t, "--kubeconfig", withNS, "--context", "in-a")
	if got := names(t, table(t, r.Stdout)); !reflect.DeepEqual(got, []string{"in-a"}) {
		t.Errorf("--kubeconfig with --context in-a: listed %v, want [in-a]\n%s", got, r)
	}
	r = once(t, "--kubeconfig", withNS)
	if got := names(t, table(t, r.Stdout)); !reflect.DeepEqual(got, []string{"in-b"}) {
		t.Errorf("--kubeconfig: listed %v, want [in-b] from its current context\n%s", got, r)
	}

	// A context without a namespace: "default".
	noNS := filepath.Join(t.TempDir(), "kubeconfig")
	copyKubeconfig(t, noNS)
	ctx := strings.TrimSpace(env.Kubectl(t, "--kubeconfig", noNS, "config", "current-context"))
	env.Kubectl(t, "--kubeconfig", noNS, "config", "unset", "contexts."+ctx+".namespace")
	if ns := env.Kubectl(t, "--kubeconfig", noNS, "config", "view", "--minify", "-o", "jsonpath={.contexts[0].context.namespace}"); ns != "" {
		t.Fatalf("the kubeconfig copy still has namespace %q", ns)
	}
	mark := labelValue("default-" + t.Name())
	env.Apply(t, "default", podYAML("in-default", map[string]string{"e2e": mark}, ""))
	t.Cleanup(func() { _, _ = env.KubectlErr("delete", "pod", "-n", "default", "in-default", "--wait=false") })
	r = env.PodsyncEnv(t, runLimit, []string{"KUBECONFIG=" + noNS}, "--once", "-l", "e2e="+mark)
	if got := names(t, table(t, r.Stdout)); !reflect.DeepEqual(got, []string{"in-default"}) {
		t.Errorf("no namespace anywhere: listed %v, want [in-default] from namespace default\n%s", got, r)
	}
}

// labelValue makes a label value unique to a test from s.
func labelValue(s string) string {
	v := nonLabel.ReplaceAllString(strings.ToLower(s), "-")
	return strings.Trim(v[:min(len(v), 63)], "-")
}

var nonLabel = regexp.MustCompile(`[^a-z0-9]+`)

func copyKubeconfig(t *testing.T, dst string) {
	t.Helper()
	raw := env.KubectlOut(t, "config", "view", "--raw", "--flatten")
	if err := os.WriteFile(dst, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
}

// -A watches every namespace and puts NAMESPACE right after EVENT; its rows
// are those of `kubectl get pods -A` for the same pods.
func TestAllNamespaces(t *testing.T) {
	a, b := env.Namespace(t), env.Namespace(t)
	mark := labelValue(a)
	env.Apply(t, a, podYAML("pod-a", map[string]string{"e2e": mark}, ""))
	runningPod(t, b, "pod-b", map[string]string{"e2e": mark})
	waitStatus(t, a, "pod-a", "1/1", "Running")
	sel := "e2e=" + mark

	got := table(t, once(t, "-A", "-l", sel).Stdout)
	if len(got.Header) < 3 || got.Header[0] != "EVENT" || got.Header[1] != "NAMESPACE" || got.Header[2] != "NAME" {
		t.Fatalf("header %v: want EVENT NAMESPACE NAME ...", got.Header)
	}
	want := table(t, env.KubectlOut(t, "get", "pods", "-A", "-l", sel))
	assertSameRows(t, want, got.Without("EVENT", "CHANGES"), []string{"NAMESPACE", "NAME"})
	if keys := sortedKeys(got.ByKey("NAMESPACE", "NAME")); !reflect.DeepEqual(keys, []string{a + "/pod-a", b + "/pod-b"}) {
		t.Errorf("-A listed %v, want both namespaces' pods", keys)
	}

	// A pod added later in a third namespace shows with its namespace.
	c := env.Namespace(t)
	s := env.Start(t, "-A", "-l", sel)
	s.WaitLines(`^SYNC\s`, 2, lineLimit)
	env.Apply(t, c, podYAML("pod-c", map[string]string{"e2e": mark}, ""))
	s.WaitLine(`^ADD\s+`+regexp.QuoteMeta(c)+`\s+pod-c\s`, lineLimit)
	r := s.Stop(syscall.SIGTERM)
	if r.Code != 143 {
		t.Errorf("exit after SIGTERM: %d, want 143\n%s", r.Code, r)
	}
}

// -l is a label selector the server applies: only matching pods show, a
// pod that comes to match later is added, and the request carries it.
func TestLabelSelector(t *testing.T) {
	ns := env.Namespace(t)
	env.Apply(t, ns, podYAML("web", map[string]string{"app": "web", "tier": "front"}, ""))
	env.Apply(t, ns, podYAML("web-cache", map[string]string{"app": "web", "tier": "cache"}, ""))
	runningPod(t, ns, "db", map[string]string{"app": "db"})
	waitStatus(t, ns, "web", "1/1", "Running")
	waitStatus(t, ns, "web-cache", "1/1", "Running")
	sel := "app=web,tier!=cache"

	selectedByServer(t, ns, "-l", "labelSelector", sel, "web")

	s := env.Start(t, "-n", ns, "-l", sel)
	s.WaitLine(`^SYNC\s+web\s`, lineLimit)
	label(t, ns, "db", "app=web")
	s.WaitLine(`^ADD\s+db\s`, lineLimit)
	label(t, ns, "web", "version=2")
	s.WaitLine(`^UPDATE\s+web\s.*metadata\.labels`, lineLimit)
	r := s.Stop(syscall.SIGINT)
	if n := count(s.Lines(), `web-cache`); n != 0 {
		t.Errorf("web-cache (tier=cache) printed %d times\n%s", n, r)
	}

	bad := env.Podsync(t, runLimit, "-n", ns, "-l", "app in (web")
	if bad.Code != 2 || !oneErrorLine(bad.Stderr, "selector") || bad.Stdout != "" {
		t.Errorf("bad selector: want exit 2 and one error line naming the selector\n%s", bad)
	}
}

// selectedByServer runs --once with a selector flag and asserts that only
// the wanted pod is listed and that the list request carried the selector
// as query parameter param, so the server did the filtering.
func selectedByServer(t *testing.T, ns, flag, param, sel, want string) {
	t.Helper()
	r := once(t, "-n", ns, flag, sel, "-v=6")
	if got := names(t, table(t, r.Stdout)); !reflect.DeepEqual(got, []string{want}) {
		t.Errorf("%s %s listed %v, want [%s]\n%s", flag, sel, got, want, r)
	}
	if !strings.Contains(r.Stderr, param+"="+url.QueryEscape(sel)) {
		t.Errorf("the list request does not carry %s=%s:\n%s", param, url.QueryEscape(sel), r.Stderr)
	}
}

// --field-selector is applied by the server too.
func TestFieldSelector(t *testing.T) {
	ns := env.Namespace(t)
	runningPod(t, ns, "running", nil)
	env.Apply(t, ns, podYAML("stuck", nil, "  nodeSelector:\n    e2e-no-such-node: \"true\"\n"))
	waitStatus(t, ns, "stuck", "0/1", "Pending")
	sel := "status.phase=Pending"

	selectedByServer(t, ns, "--field-selector", "fieldSelector", sel, "stuck")
	r := once(t, "-n", ns, "--field-selector", "metadata.name=running")
	if got := names(t, table(t, r.Stdout)); !reflect.DeepEqual(got, []string{"running"}) {
		t.Errorf("--field-selector metadata.name=running listed %v\n%s", got, r)
	}

	s := env.Start(t, "-n", ns, "--field-selector", sel)
	s.WaitLine(`^SYNC\s+stuck\s`, lineLimit)
	env.Apply(t, ns, podYAML("stuck-2", nil, "  nodeSelector:\n    e2e-no-such-node: \"true\"\n"))
	s.WaitLine(`^ADD\s+stuck-2\s+0/1\s+Pending\s`, lineLimit)
	label(t, ns, "running", "touched=yes")
	label(t, ns, "stuck", "touched=yes")
	s.WaitLine(`^UPDATE\s+stuck\s`, lineLimit)
	s.Stop(syscall.SIGINT)
	if n := count(s.Lines(), `\brunning\b`); n != 0 {
		t.Errorf("the Running pod was printed %d times\n%s", n, s.Dump())
	}

	bad := env.Podsync(t, runLimit, "-n", ns, "--field-selector", "status.phase")
	if bad.Code != 2 || !oneErrorLine(bad.Stderr, "field-selector") {
		t.Errorf("bad field selector: want exit 2 and one error line\n%s", bad)
	}
}

// POD_NAME arguments: one name, several names, a name that only exists
// later (ADD), and no pod of another name, ever.
func TestPodNames(t *testing.T) {
	ns := env.Namespace(t)
	runningPods(t, ns, "alpha", "bravo", "delta")
	if got := names(t, table(t, once(t, "-n", ns, "bravo").Stdout)); !reflect.DeepEqual(got, []string{"bravo"}) {
		t.Errorf("one name: listed %v, want [bravo]", got)
	}

	s := env.Start(t, "-n", ns, "alpha", "delta", "later")
	s.WaitLines(`^SYNC\s`, 2, lineLimit)
	env.Apply(t, ns, podYAML("other", nil, ""))
	env.Apply(t, ns, podYAML("later", nil, ""))
	s.WaitLine(`^ADD\s+later\s`, lineLimit)
	s.WaitLine(`^UPDATE\s+later\s+1/1\s+Running\s`, lineLimit)
	label(t, ns, "bravo", "touched=yes")
	label(t, ns, "other", "touched=yes")
	label(t, ns, "alpha", "touched=yes")
	s.WaitLine(`^UPDATE\s+alpha\s`, lineLimit)
	r := s.Stop(syscall.SIGINT)
	if got := syncNames(s.Lines()); !reflect.DeepEqual(got, []string{"alpha", "delta"}) {
		t.Errorf("several names: SYNC for %v, want [alpha delta]\n%s", got, r)
	}
	if n := count(s.Lines(), `\b(bravo|other)\b`); n != 0 {
		t.Errorf("pods that were not named printed %d times\n%s", n, r)
	}

	// One name that does not exist yet: created once the watch is open, it
	// is an ADD.
	s = env.Start(t, "-n", ns, "solo", "-v=6")
	s.WaitStderr(`watch=true`, lineLimit)
	env.Apply(t, ns, podYAML("solo", nil, ""))
	s.WaitLine(`^ADD\s+solo\s`, lineLimit)
	r = s.Stop(syscall.SIGINT)
	if n := count(s.Lines(), `^SYNC`); n != 0 {
		t.Errorf("SYNC lines for a pod that did not exist at the start:\n%s", r)
	}

	bad := env.Podsync(t, runLimit, "-A", "alpha")
	if bad.Code != 2 || !oneErrorLine(bad.Stderr, "all-namespaces") {
		t.Errorf("names with -A: want exit 2 and one error line\n%s", bad)
	}
}

func syncNames(lines []string) []string {
	var out []string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "SYNC" {
			out = append(out, f[1])
		}
	}
	slices.Sort(out)
	return out
}

// oneErrorLine reports whether stderr is exactly one line, "error: ...",
// that mentions word.
func oneErrorLine(stderr, word string) bool {
	return strings.Count(stderr, "\n") == 1 && strings.HasPrefix(stderr, "error: ") && strings.Contains(stderr, word)
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// assertSameRows compares two tables cell by cell: same header, same rows
// by key, AGE within a few seconds.
func assertSameRows(t *testing.T, want, got harness.Table, key []string) {
	t.Helper()
	if diff := tableDiff(want, got, key); diff != "" {
		t.Error(diff)
	}
}

// tableDiff says how got differs from want ("" when equal): the header,
// the set of rows by key, and each cell; AGE and the "(5s ago)" of
// RESTARTS may differ by the seconds between the two commands.
func tableDiff(want, got harness.Table, key []string) string {
	if !reflect.DeepEqual(want.Header, got.Header) {
		return fmt.Sprintf("header %v, want %v", got.Header, want.Header)
	}
	w, g := want.ByKey(key...), got.ByKey(key...)
	if !reflect.DeepEqual(sortedKeys(w), sortedKeys(g)) {
		return fmt.Sprintf("rows %v, want %v", sortedKeys(g), sortedKeys(w))
	}
	var diffs []string
	for k, wr := range w {
		gr := g[k]
		for i, h := range want.Header {
			if !sameCell(h, wr[i], gr[i]) {
				diffs = append(diffs, fmt.Sprintf("%s %s: %q, kubectl shows %q", k, h, gr[i], wr[i]))
			}
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "\n")
}

var restartsAgo = regexp.MustCompile(`^(\d+) \((.+) ago\)$`)

func sameCell(column, want, got string) bool {
	switch column {
	case "AGE":
		return closeAges(want, got)
	case "RESTARTS":
		w, g := restartsAgo.FindStringSubmatch(want), restartsAgo.FindStringSubmatch(got)
		if w != nil && g != nil {
			return w[1] == g[1] && closeAges(w[2], g[2])
		}
	}
	return want == got
}

// closeAges compares two kubectl durations ("45s", "3m2s", "2d") loosely.
func closeAges(a, b string) bool {
	da, errA := parseAge(a)
	db, errB := parseAge(b)
	if errA != nil || errB != nil {
		return a == b
	}
	diff := (da - db).Abs()
	return diff <= 10*time.Second || diff <= max(da, db)/20
}

var ageUnit = map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour, 'y': 365 * 24 * time.Hour}

func parseAge(s string) (time.Duration, error) {
	var total time.Duration
	n := 0
	digits := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			n = n*10 + int(c-'0')
			digits = true
		case ageUnit[c] != 0 && digits:
			total += time.Duration(n) * ageUnit[c]
			n, digits = 0, false
		default:
			return 0, fmt.Errorf("not an age: %q", s)
		}
	}
	if digits || s == "" {
		return 0, fmt.Errorf("not an age: %q", s)
	}
	return total, nil
}
