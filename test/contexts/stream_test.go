package contexts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// One stream over three contexts: a CONTEXT column after EVENT (before
// NAMESPACE with -A) whose cells are those kubectl shows in each context,
// "context" in the JSON envelope, and the context before pod/NAME.
func TestOneStreamOverThreeContexts(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	cs := readyPodEverywhere(t, ns, "web")
	createPod(t, cs[1].cs, ns, pod("only-two", nil))
	harness.WaitReady(t, cs[1].cs, ns, "only-two")

	r := env.Podsync(t, time.Minute, "--context", all, "-n", ns, "--once")
	wantExit(t, r, 0)
	table, err := harness.ParseTable(r.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"EVENT", "CONTEXT", "NAME", "READY", "STATUS", "RESTARTS", "AGE", "CHANGES"}; !slices.Equal(table.Header, want) {
		t.Fatalf("header %q, want %q", table.Header, want)
	}
	got := table.Without("AGE", "CHANGES").ByKey("CONTEXT", "NAME")
	for _, c := range env.Contexts {
		kubectl, err := harness.ParseTable(env.KubectlOut(t, "get", "pods", "--context", c, "-n", ns))
		if err != nil {
			t.Fatal(err)
		}
		for name, cells := range kubectl.Without("AGE").ByKey("NAME") {
			want := append([]string{"SYNC", c}, cells...)
			if row := got[c+"/"+name]; !slices.Equal(row, want) {
				t.Errorf("context %s pod %s: podsync %q, kubectl %q", c, name, row, want)
			}
			delete(got, c+"/"+name)
		}
	}
	if len(got) != 0 {
		t.Errorf("rows kubectl does not show: %q", got)
	}

	r = env.Podsync(t, time.Minute, "--context", "podsync-1,podsync-3", "-A", "-l", "app=web", "--once")
	wantExit(t, r, 0)
	wantLines(t, r.Stdout, `^EVENT\s+CONTEXT\s+NAMESPACE\s+NAME\s+READY\s`, 1)
	wantLines(t, r.Stdout, `^SYNC\s+podsync-[13]\s+`+ns+`\s+web\s+1/1\s+Running\s`, 2)
	wantLines(t, r.Stdout, `podsync-2`, 0)

	r = env.Podsync(t, time.Minute, "--context", all, "-n", ns, "--once", "-o", "json")
	wantExit(t, r, 0)
	var seen []string
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		var ev struct {
			Type, Context string
			Object        struct{ Metadata struct{ Name string } }
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Type != "SYNC" {
			t.Fatalf("line %q: %v", line, err)
		}
		if !strings.HasPrefix(line, `{"type":"SYNC","context":"`+ev.Context+`","object":{`) {
			t.Errorf("envelope order: %.80s", line)
		}
		seen = append(seen, ev.Context+"/"+ev.Object.Metadata.Name)
	}
	slices.Sort(seen)
	if want := []string{"podsync-1/web", "podsync-2/only-two", "podsync-2/web", "podsync-3/web"}; !slices.Equal(seen, want) {
		t.Errorf("json messages %q, want %q", seen, want)
	}

	r = env.Podsync(t, time.Minute, "--context", all, "-n", ns, "--once", "-o", "name")
	wantExit(t, r, 0)
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	slices.Sort(lines)
	if want := []string{"podsync-1 pod/web synced", "podsync-2 pod/only-two synced", "podsync-2 pod/web synced", "podsync-3 pod/web synced"}; !slices.Equal(lines, want) {
		t.Errorf("-o name %q, want %q", lines, want)
	}
}

// A watched stream names each change's context; the same pod name in two
// clusters keeps its own CHANGES.
func TestChangesNameTheirContext(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	cs := readyPodEverywhere(t, ns, "web")
	s := env.Start(t, "--context", all, "-n", ns)
	s.WaitLines(`^SYNC\s+podsync-\d\s+web\s+1/1\s+Running\s`, 3, time.Minute)
	harness.SetLabel(t, cs[2].cs, ns, "web", "tier", "front")
	s.WaitLine(`^UPDATE\s+podsync-3\s+web\s+1/1\s+Running\s+0\s+\S+\s+metadata\.labels$`, time.Minute)
	harness.DeleteNow(t, cs[0].cs, ns, "web")
	s.WaitLine(`^GONE\s+podsync-1\s+web\s`, time.Minute)
	createPod(t, cs[1].cs, ns, pod("new", nil))
	s.WaitLine(`^ADD\s+podsync-2\s+new\s`, time.Minute)
	s.WaitLine(`^(ADD|UPDATE)\s+podsync-2\s+new\s+1/1\s+Running\s`, time.Minute)
	r := s.Stop(syscall.SIGTERM)
	wantExit(t, r, 143)
	// The label changed in podsync-3 only.
	wantLines(t, r.Stdout, `^UPDATE\s+podsync-[12]\s+web\s.*metadata\.labels`, 0)
	wantStderr(t, r, "Verdict:  interrupted (exit 143)",
		"Contexts: podsync-1  done  0 pods  0 matching pods, no failure seen\n"+
			"          podsync-2  done  2 pods  2 matching pods, no failure seen\n"+
			"          podsync-3  done  1 pod   1 matching pods, no failure seen\n")
}

// Patterns and exact names: a list, a character class, a pattern that
// matches one context (exactly the output of one context), a context whose
// name is itself a pattern, and a pattern that matches nothing (exit 2
// naming the contexts there are).
func TestPatternsAndExactNames(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	readyPodEverywhere(t, ns, "web")

	r := env.Podsync(t, time.Minute, "--context", "podsync-[13]", "-n", ns, "--once", "-o", "name")
	wantExit(t, r, 0)
	if r.Stdout != "podsync-1 pod/web synced\npodsync-3 pod/web synced\n" && r.Stdout != "podsync-3 pod/web synced\npodsync-1 pod/web synced\n" {
		t.Errorf("podsync-[13]: %q", r.Stdout)
	}

	one := env.Podsync(t, time.Minute, "--context", "podsync-2*", "-n", ns, "--once")
	plain := env.Podsync(t, time.Minute, "--context", "podsync-2", "-n", ns, "--once")
	wantExit(t, one, 0)
	wantLines(t, one.Stdout, `^EVENT\s+NAME\s+READY\s`, 1)
	if withoutAge(t, one.Stdout) != withoutAge(t, plain.Stdout) || one.Stderr != plain.Stderr {
		t.Errorf("a pattern matching one context differs from naming it:\n%s\n%s", one, plain)
	}

	// A context literally named podsync-* wins over the pattern.
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	data, err := os.ReadFile(env.MultiKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
		t.Fatal(err)
	}
	env.Kubectl(t, "--kubeconfig", kubeconfig, "config", "set-context", all, "--cluster", "podsync-3", "--user", "podsync-3", "--namespace", ns)
	r = env.Podsync(t, time.Minute, "--kubeconfig", kubeconfig, "--context", all, "--once", "-o", "name")
	wantExit(t, r, 0)
	if r.Stdout != "pod/web synced\n" {
		t.Errorf("the context named %q: %q", all, r.Stdout)
	}

	r = env.Podsync(t, time.Minute, "--context", "prod-*,podsync-1", "--once")
	wantExit(t, r, 2)
	want := `error: no context matches "prod-*" in the kubeconfig; its contexts are no-events@podsync-1, `
	if r.Stdout != "" || !strings.HasPrefix(r.Stderr, want) || !strings.Contains(r.Stderr, ", podsync-1, podsync-2, podsync-3, ") || strings.Count(r.Stderr, "\n") != 1 {
		t.Errorf("stderr %q, want one line starting %q and naming podsync-1 to 3", r.Stderr, want)
	}
}

// withoutAge is a table without its AGE column, which moves as time passes.
func withoutAge(t *testing.T, text string) string {
	t.Helper()
	table, err := harness.ParseTable(text)
	if err != nil {
		t.Fatal(err)
	}
	table = table.Without("AGE")
	return fmt.Sprint(table.Header, table.Rows)
}

// A pod crash-looping in one of three clusters: with --diagnose and
// --events, its log and its Events name their context in the stream, and
// the failed check explains it with that log. The crash is in podsync-1,
// whose API server no other test restarts: its logs are served by kwok,
// which takes long to recover from a restart.
func TestDiagnosisNamesItsContext(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	appInStates(t, ns, localcluster.StateCrashLoop, "", "")
	// Started after the pods: the crash loop's BackOff Warning repeats, so
	// its count grows while the stream runs.
	s := env.Start(t, "--context", all, "-n", ns, "--diagnose", "--events")
	last := regexp.QuoteMeta(localcluster.CrashLoopLastLine)
	s.WaitLines(`^    podsync-1 app: container app \((current|previous) instance\), last \d+ log lines?:$`, 1, 2*time.Minute)
	s.WaitLines(`^      `+last+`$`, 1, 2*time.Minute)
	s.WaitLines(`^WARNING\s+podsync-1\s+app\s+BackOff( \(x\d+\))?: Back-off restarting failed container`, 1, 2*time.Minute)
	r := s.Stop(syscall.SIGINT)
	for _, other := range []string{"podsync-2", "podsync-3"} {
		if regexp.MustCompile(`(?m)^(    ` + other + ` app: |WARNING\s+` + other + `\s)`).MatchString(r.Stdout) {
			t.Errorf("a pod that does not crash in %s is diagnosed or warned about:\n%s", other, r.Stdout)
		}
	}

	check := env.Podsync(t, 3*time.Minute, "--context", all, "-n", ns, "--until", "ready", "--timeout", "2m")
	wantExit(t, check, 4)
	wantStderr(t, check, "Pod "+ns+"/app in context podsync-1 is not satisfied:", localcluster.CrashLoopLastLine)
}
