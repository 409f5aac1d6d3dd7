package e2e

// The contract's output formats: -o json, yaml, name, the templates and
// custom columns (each against `kubectl get pod -o ...`), --no-headers,
// --show-labels, -L, managedFields, --color, and lines through a pipe.

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// -o json: one compact {"type","object"} line per message, the object a v1
// Pod without managedFields, equal to what kubectl get shows for it.
func TestOutputJSON(t *testing.T) {
	ns := env.Namespace(t)
	runningPods(t, ns, "steady")
	if mf := env.KubectlOut(t, "get", "pod", "-n", ns, "steady", "--show-managed-fields", "-o", "jsonpath={.metadata.managedFields}"); mf == "" {
		t.Fatal("the API server keeps no managedFields for the pod: nothing to leave out")
	}
	s := env.Start(t, "-n", ns, "-o", "json")
	s.WaitLine(`^\{"type":"SYNC","object":\{"kind":"Pod","apiVersion":"v1","metadata":\{"name":"steady"`, lineLimit)
	want := objectJSON(t, env.KubectlOut(t, "get", "pod", "-n", ns, "steady", "-o", "json"))
	env.Apply(t, ns, podYAML("fresh", nil, ""))
	s.WaitLine(`^\{"type":"ADD".*"name":"fresh"`, lineLimit)
	s.WaitLine(`^\{"type":"UPDATE".*"name":"fresh".*"phase":"Running"`, lineLimit)
	env.Kubectl(t, "delete", "pod", "-n", ns, "fresh", "--wait=false")
	s.WaitLine(`^\{"type":"GONE".*"name":"fresh"`, lineLimit)
	r := s.Stop(syscall.SIGINT)
	if r.Code != 130 {
		t.Errorf("exit after SIGINT: %d\n%s", r.Code, r.Stderr)
	}

	events := jsonEvents(t, s.Lines())
	if events[0].Type != "SYNC" || events[0].Pod.Name != "steady" {
		t.Fatalf("first message %s %s, want SYNC steady", events[0].Type, events[0].Pod.Name)
	}
	if got := objectJSON(t, string(events[0].Object)); !reflect.DeepEqual(got, want) {
		t.Errorf("the SYNC object differs from kubectl get -o json:\n got %v\nwant %v", got, want)
	}
	var kinds []string
	for _, ev := range events {
		if ev.Pod.Name == "fresh" && (len(kinds) == 0 || kinds[len(kinds)-1] != ev.Type) {
			kinds = append(kinds, ev.Type)
		}
	}
	if strings.Join(kinds, " ") != "ADD UPDATE GONE" {
		t.Errorf("fresh: %v, want ADD UPDATE GONE", kinds)
	}
}

func objectJSON(t *testing.T, text string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatalf("decode %.200s: %v", text, err)
	}
	return m
}

// Without a table, the first list is a streaming list (WatchList) where
// the server has it, and the paginated list where the client may not use
// it (the WatchListClient feature gate of client-go off): both print the
// same bytes, and each run made the request it was meant to.
func TestStreamedListPrintsAsPaginated(t *testing.T) {
	ns := env.Namespace(t)
	runningPods(t, ns, "one", "two", "three")
	const streamed, paginated = "sendInitialEvents=true", "limit=500"
	runs := map[string]harness.Result{}
	for name, extraEnv := range map[string][]string{streamed: nil, paginated: {"KUBE_FEATURE_WatchListClient=false"}} {
		r := env.PodsyncEnv(t, runLimit, extraEnv, "-n", ns, "-o", "json", "--once", "-v=6")
		if r.Code != 0 || !strings.Contains(r.Stderr, name) {
			t.Fatalf("want exit 0 and a request with %s\n%s", name, r)
		}
		runs[name] = r
	}
	if got, want := runs[streamed].Stdout, runs[paginated].Stdout; got != want || len(jsonEvents(t, strings.Split(strings.TrimSpace(got), "\n"))) != 3 {
		t.Errorf("the streamed list printed\n%s\nthe paginated list\n%s", got, want)
	}
}

// After a streamed list the watch goes on as a plain one, from the
// list's end: its events are not compressed one by one, and the changes
// after the list are printed.
func TestWatchAfterStreamedListIsPlain(t *testing.T) {
	ns := env.Namespace(t)
	runningPods(t, ns, "steady")
	s := env.Start(t, "-n", ns, "-o", "name", "-v=6")
	s.WaitLine(`^pod/steady synced$`, lineLimit)
	env.Apply(t, ns, podYAML("fresh", nil, ""))
	s.WaitLine(`^pod/fresh added$`, lineLimit)
	watches := podWatches(s.Stderr(), ns)
	if len(watches) != 2 || !strings.Contains(watches[0], "sendInitialEvents=true") ||
		strings.Contains(watches[1], "sendInitialEvents") || !strings.Contains(watches[1], "resourceVersion=") {
		t.Errorf("want a streamed list, then a plain watch from its resourceVersion; the watches were:\n%s", strings.Join(watches, "\n"))
	}
}

// --once ends with its first list and asks for no watch after it: the
// table lists, and a streamed list (-o name), a watch itself, is not
// followed by the plain watch that would replace it.
func TestOnceAsksForNoWatch(t *testing.T) {
	ns := env.Namespace(t)
	runningPods(t, ns, "steady")
	for _, c := range []struct {
		args  []string
		want  int
		which string
	}{{nil, 0, "no watch"}, {[]string{"-o", "name"}, 1, "the streamed list only"}} {
		r := once(t, append([]string{"-n", ns, "-v=6"}, c.args...)...)
		watches := podWatches(r.Stderr, ns)
		if len(watches) != c.want || c.want == 1 && !strings.Contains(watches[0], "sendInitialEvents=true") {
			t.Errorf("--once %v: want %s; the watches were:\n%s", c.args, c.which, strings.Join(watches, "\n"))
		}
	}
}

// podWatches are the lines of a -v=6 log that tell of a watch of the
// pods of namespace ns.
func podWatches(log, ns string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "/namespaces/"+ns+"/pods?") && strings.Contains(line, "watch=true") {
			out = append(out, line)
		}
	}
	return out
}

// -o yaml: the same {type, object} documents, separated by ---.
func TestOutputYAML(t *testing.T) {
	ns := env.Namespace(t)
	runningPods(t, ns, "one", "two")
	r := once(t, "-n", ns, "-o", "yaml")
	docs := strings.Split(r.Stdout, "\n---\n")
	if len(docs) != 2 || strings.HasPrefix(r.Stdout, "---") {
		t.Fatalf("want 2 YAML documents separated by ---, got %d:\n%s", len(docs), r.Stdout)
	}
	for _, doc := range docs {
		var ev struct {
			Type   string         `json:"type"`
			Object map[string]any `json:"object"`
		}
		if err := yaml.Unmarshal([]byte(doc), &ev); err != nil {
			t.Fatalf("document is not YAML: %v\n%s", err, doc)
		}
		meta, _ := ev.Object["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		if ev.Type != "SYNC" || ev.Object["kind"] != "Pod" || ev.Object["apiVersion"] != "v1" {
			t.Errorf("document %s: type %q kind %v apiVersion %v", name, ev.Type, ev.Object["kind"], ev.Object["apiVersion"])
		}
		if _, ok := meta["managedFields"]; ok {
			t.Errorf("document %s has managedFields", name)
		}
		var want map[string]any
		if err := yaml.Unmarshal([]byte(env.KubectlOut(t, "get", "pod", "-n", ns, name, "-o", "yaml")), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ev.Object, want) {
			t.Errorf("document %s differs from kubectl get -o yaml:\n got %v\nwant %v", name, ev.Object, want)
		}
	}
}

// -o name: pod/NAME and a verb per event.
func TestOutputName(t *testing.T) {
	ns := env.Namespace(t)
	runningPods(t, ns, "steady")
	s := env.Start(t, "-n", ns, "-o", "name")
	want := strings.TrimSpace(env.KubectlOut(t, "get", "pod", "-n", ns, "steady", "-o", "name"))
	s.WaitLine(`^`+regexp.QuoteMeta(want)+` synced$`, lineLimit)
	env.Apply(t, ns, podYAML("fresh", nil, ""))
	s.WaitLine(`^pod/fresh added$`, lineLimit)
	s.WaitLine(`^pod/fresh updated$`, lineLimit)
	env.Kubectl(t, "delete", "pod", "-n", ns, "fresh", "--wait=false")
	s.WaitLine(`^pod/fresh gone$`, lineLimit)
	r := s.Stop(syscall.SIGINT)
	if n := count(s.Lines(), `^pod/(steady|fresh) (synced|added|updated|gone)$`); n != len(s.Lines()) {
		t.Errorf("%d of %d lines are pod/NAME VERB:\n%s", n, len(s.Lines()), r.Stdout)
	}
}

// Templates and custom columns (inline and from files) print exactly what
// kubectl get prints for the same pod, including unset fields (<none>,
// <no value>), times and numbers; managedFields are never there.
func TestOutputTemplates(t *testing.T) {
	ns := env.Namespace(t)
	runningPods(t, ns, "steady")
	env.Apply(t, ns, podYAML("gated", nil, "  schedulingGates:\n  - name: podsync.test/gate\n"))
	waitStatus(t, ns, "gated", "0/1", "SchedulingGated")

	jp := `{.metadata.name} {.status.phase} {.spec.nodeName} {.metadata.creationTimestamp} {.spec.terminationGracePeriodSeconds} {.metadata.labels}{"\n"}`
	gt := `{{.metadata.name}} {{.status.phase}} {{.spec.nodeName}} {{.metadata.creationTimestamp}} {{.spec.terminationGracePeriodSeconds}} {{.metadata.labels}}{{"\n"}}`
	cc := "NAME:.metadata.name,NODE:.spec.nodeName,IP:.status.podIP,CREATED:.metadata.creationTimestamp,GRACE:.spec.terminationGracePeriodSeconds,GATES:.spec.schedulingGates[*].name"
	ccFile := "NAME NODE IP CREATED GRACE\n.metadata.name .spec.nodeName .status.podIP .metadata.creationTimestamp .spec.terminationGracePeriodSeconds\n"
	formats := map[string]string{
		"jsonpath":            "jsonpath=" + jp,
		"jsonpath-file":       "jsonpath-file=" + writeFile(t, "template.jsonpath", jp),
		"go-template":         "go-template=" + gt,
		"go-template-file":    "go-template-file=" + writeFile(t, "template.gotmpl", gt),
		"custom-columns":      "custom-columns=" + cc,
		"custom-columns-file": "custom-columns-file=" + writeFile(t, "columns.txt", ccFile),
	}
	for name, format := range formats {
		t.Run(name, func(t *testing.T) {
			for _, pod := range []string{"steady", "gated"} {
				want := env.KubectlOut(t, "get", "pod", "-n", ns, pod, "-o", format)
				got := once(t, "-n", ns, pod, "-o", format).Stdout
				if got != want {
					t.Errorf("pod %s: podsync printed\n%q\nkubectl get printed\n%q", pod, got, want)
				}
			}
		})
	}

	t.Run("managedFields", func(t *testing.T) {
		for _, format := range []string{"jsonpath={.metadata.managedFields}", "go-template={{.metadata.managedFields}}"} {
			if kube := env.KubectlOut(t, "get", "pod", "-n", ns, "steady", "-o", format); !strings.Contains(kube, "fieldsV1") {
				t.Fatalf("kubectl get -o %s shows no managedFields (%q): nothing to leave out", format, kube)
			}
			if got := once(t, "-n", ns, "steady", "-o", format).Stdout; strings.Contains(got, "fieldsV1") || strings.Contains(got, "Manager") {
				t.Errorf("-o %s printed managedFields: %q", format, got)
			}
		}
	})
}

// --no-headers, --show-labels and -L/--label-columns print what kubectl get
// prints with the same flag, plus EVENT and CHANGES.
func TestTableFlags(t *testing.T) {
	ns := env.Namespace(t)
	env.Apply(t, ns, podYAML("front", map[string]string{"app": "web", "tier": "front"}, ""))
	env.Apply(t, ns, podYAML("back", map[string]string{"app": "db"}, ""))
	waitStatus(t, ns, "front", "1/1", "Running")
	waitStatus(t, ns, "back", "1/1", "Running")

	for _, flags := range [][]string{{"--show-labels"}, {"-L", "app,tier"}, {"--label-columns", "tier"}, {"-o", "wide", "--show-labels"}} {
		want := table(t, env.KubectlOut(t, append([]string{"get", "pods", "-n", ns}, flags...)...))
		got := table(t, once(t, append([]string{"-n", ns}, flags...)...).Stdout)
		if got.Column("CHANGES") != len(got.Header)-1 || got.Header[0] != "EVENT" {
			t.Errorf("%v: header %v does not start with EVENT and end with CHANGES", flags, got.Header)
		}
		if diff := tableDiff(want, got.Without("EVENT", "CHANGES"), []string{"NAME"}); diff != "" {
			t.Errorf("%v differs from kubectl get:\n%s", flags, diff)
		}
	}

	r := once(t, "-n", ns, "--no-headers")
	kube := env.KubectlOut(t, "get", "pods", "-n", ns, "--no-headers")
	got, want := strings.Split(strings.TrimSpace(r.Stdout), "\n"), strings.Split(strings.TrimSpace(kube), "\n")
	if len(got) != len(want) {
		t.Fatalf("--no-headers: %d lines, kubectl get prints %d\n%s", len(got), len(want), r.Stdout)
	}
	columns := []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}
	for i := range got {
		g, w := fields(t, got[i]), fields(t, want[i])
		same := g[0] == "SYNC" && len(g) == len(w)+1 && len(w) == len(columns)
		for c := 0; same && c < len(columns); c++ {
			same = sameCell(columns[c], w[c], g[c+1])
		}
		if !same || strings.HasPrefix(got[i], "EVENT") {
			t.Errorf("--no-headers line %q, kubectl get prints %q", got[i], want[i])
		}
	}
}

// Every print flag in -h does what it says: --sort-by
// orders the initial block as kubectl get --sort-by orders its list,
// --show-managed-fields prints managedFields, --show-kind names the kind;
// --once without --until prints the list and no summary.
func TestPrintFlagsDoWhatTheySay(t *testing.T) {
	ns := env.Namespace(t)
	for i, name := range []string{"b-pod", "c-pod", "a-pod"} {
		env.Apply(t, ns, podYAML(name, map[string]string{"rank": fmt.Sprint(3 - i)}, ""))
	}
	for _, name := range []string{"a-pod", "b-pod", "c-pod"} {
		waitStatus(t, ns, name, "1/1", "Running")
	}
	for _, field := range []string{"{.metadata.labels.rank}", ".metadata.creationTimestamp", "{.metadata.name}"} {
		want := names(t, table(t, env.KubectlOut(t, "get", "pods", "-n", ns, "--sort-by", field)))
		r := once(t, "-n", ns, "--sort-by", field)
		if got := names(t, table(t, r.Stdout)); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("--sort-by %s: %v, kubectl get orders %v", field, got, want)
		}
		if r.Stderr != "" {
			t.Errorf("--once without --until wrote %q to stderr, want nothing", r.Stderr)
		}
	}
	if r := env.Podsync(t, runLimit, "-n", ns, "--once", "--sort-by", "{.metadata.labels}"); r.Code != 2 || !oneErrorLine(r.Stderr, "--sort-by") {
		t.Errorf("--sort-by a map: want exit 2 and one error line\n%s", r)
	}

	with := once(t, "-n", ns, "a-pod", "-o", "json", "--show-managed-fields")
	without := once(t, "-n", ns, "a-pod", "-o", "json")
	if !strings.Contains(with.Stdout, `"managedFields":[`) || strings.Contains(without.Stdout, "managedFields") {
		t.Errorf("--show-managed-fields: with %.200s, without %.200s", with.Stdout, without.Stdout)
	}
	kind := once(t, "-n", ns, "a-pod", "--show-kind")
	if !regexp.MustCompile(`(?m)^SYNC\s+pod/a-pod\s`).MatchString(kind.Stdout) {
		t.Errorf("--show-kind: %q, want NAME pod/a-pod as kubectl get --show-kind prints it", kind.Stdout)
	}
}

// --color: auto colours the EVENT column on a terminal only, and not with
// NO_COLOR set; always and never do what they say. Colour never breaks the
// alignment.
func TestColor(t *testing.T) {
	ns := env.Namespace(t)
	runningPods(t, ns, "steady")
	escape := "\x1b["
	cases := []struct {
		name     string
		terminal bool
		noColor  bool
		flag     string
		colour   bool
	}{
		{"auto on a terminal", true, false, "auto", true},
		{"auto on a terminal with NO_COLOR", true, true, "auto", false},
		{"auto on a pipe", false, false, "auto", false},
		{"always on a pipe, even with NO_COLOR", false, true, "always", true},
		{"never on a terminal", true, false, "never", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), runLimit)
			defer cancel()
			cmd := env.Command(ctx, nil, "podsync", "-n", ns, "--once", "--color", tc.flag)
			cmd.Env = withoutNoColor(cmd.Env, tc.noColor)
			var out string
			if tc.terminal {
				out = strings.ReplaceAll(harness.RunOnTerminal(t, cmd), "\r\n", "\n")
			} else {
				b, err := cmd.Output()
				if err != nil {
					t.Fatalf("podsync on a pipe: %v", err)
				}
				out = string(b)
			}
			if got := strings.Contains(out, escape); got != tc.colour {
				t.Fatalf("colour %v, want %v:\n%q", got, tc.colour, out)
			}
			if tc.colour && !strings.Contains(out, "\x1b[34mSYNC\x1b[0m ") {
				t.Errorf("want SYNC coloured, and only the event name: %q", out)
			}
			plain := regexp.MustCompile(`\x1b\[[0-9;]*m`).ReplaceAllString(out, "")
			if names(t, table(t, plain))[0] != "steady" {
				t.Errorf("no row for steady:\n%s", plain)
			}
		})
	}
}

// withoutNoColor drops NO_COLOR (which the harness sets) unless keep.
func withoutNoColor(environ []string, keep bool) []string {
	if keep {
		return environ
	}
	var out []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "NO_COLOR=") {
			out = append(out, kv)
		}
	}
	return out
}

// Through a pipe each message arrives as its own line while the plugin
// runs: the next change is made only after the line for the previous one
// was read.
func TestLineByLineThroughPipe(t *testing.T) {
	ns := env.Namespace(t)
	s := env.Start(t, "-n", ns, "-o", "name", "-v=6")
	s.WaitStderr(`watch=true`, lineLimit)
	for _, pod := range []string{"first", "second", "third"} {
		start := time.Now()
		env.Apply(t, ns, podYAML(pod, nil, ""))
		s.WaitLine(`^pod/`+pod+` added$`, lineLimit)
		if s.Exited() {
			t.Fatalf("the plugin ended: %s", s.Dump())
		}
		t.Logf("%s: line read %s after kubectl apply started", pod, time.Since(start).Round(time.Millisecond))
		if n := count(s.Lines(), `^pod/`+pod+` added$`); n != 1 {
			t.Errorf("%d added lines for %s", n, pod)
		}
	}
	r := s.Stop(syscall.SIGINT)
	if r.Code != 130 {
		t.Errorf("exit after SIGINT: %d", r.Code)
	}
}
