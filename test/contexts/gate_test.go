package contexts

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// A rollout started in all three clusters: the gate is met only once every
// cluster runs ready pods of its new ReplicaSet, and the summary has a
// line per context.
func TestRolloutGateMetInAllThree(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	cs := clusters(t)
	for _, c := range cs {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := c.cs.AppsV1().Deployments(ns).Create(ctx, deployment("web", "registry.example/web:1", 2), metav1.CreateOptions{})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range env.Contexts {
		env.Kubectl(t, "rollout", "status", "--context", c, "-n", ns, "deployment/web", "--timeout", "2m")
	}
	for _, c := range env.Contexts {
		env.Kubectl(t, "set", "image", "--context", c, "-n", ns, "deployment/web", "app=registry.example/web:2")
	}
	r := env.Podsync(t, 5*time.Minute, "--context", all, "-n", ns, "-l", "app=web", "--until", "ready", "--timeout", "4m")
	wantExit(t, r, 0)
	t.Logf("met in all three after %s", r.Took.Round(time.Millisecond))
	wantStderr(t, r, "Verdict:  met (exit 0)", "Reason:   met in all 3 contexts\n")
	// An old pod may still be on its way out at the verdict: it is not
	// counted (the pod rules of ready), and the summary says so.
	lines := regexp.MustCompile(`(?m)^(?:Contexts: |          )podsync-(\d)  met  (\d) pods  all 2 matching pods satisfy ready(?:, not counting (\d) being deleted)?$`).FindAllStringSubmatch(r.Stderr, -1)
	leaving := 0
	for i, m := range lines {
		n, _ := strconv.Atoi(m[3])
		if m[1] != strconv.Itoa(i+1) || m[2] != strconv.Itoa(2+n) {
			t.Errorf("context line %q: want podsync-%d with 2 pods and those being deleted", m[0], i+1)
		}
		leaving += n
	}
	if len(lines) != 3 {
		t.Errorf("%d context lines met with 2 ready pods, want 3\n%s", len(lines), r)
	}
	pods := fmt.Sprintf("Pods:     %d matched (Running 6)", 6+leaving)
	if leaving > 0 {
		pods = fmt.Sprintf("Pods:     %d matched (Running 6, Terminating %d)", 6+leaving, leaving)
	}
	wantStderr(t, r, pods)
	for _, c := range env.Contexts {
		listed := env.Kubectl(t, "get", "pods", "--context", c, "-n", ns, "-l", "app=web", "-o",
			`jsonpath={range .items[*]}{.metadata.deletionTimestamp}{"|"}{.spec.containers[0].image}{" "}{end}`)
		for _, p := range strings.Fields(listed) {
			deleting, img, _ := strings.Cut(p, "|")
			if deleting == "" && !strings.HasPrefix(img, "registry.example/web:2") {
				t.Errorf("context %s: after the verdict a pod runs %s (pods: %s)", c, img, listed)
			}
		}
		if n := harness.CountLines(r.Stdout, `^(SYNC|ADD|UPDATE)\s+`+c+`\s+web-\S+\s+1/1\s+Running\s`); n < 2 {
			t.Errorf("context %s: %d lines show a ready pod, want at least 2\n%s", c, n, r.Stdout)
		}
	}
}

// A crash loop in one of three clusters fails the gate at once, naming the
// context, while the others are ready; the same pod name in the other
// clusters is not mistaken for it.
func TestCrashLoopInOneFailsAtOnce(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	cs := appInStates(t, ns, "", localcluster.StateCrashLoop, "")
	harness.WaitReady(t, cs[0].cs, ns, "app")
	harness.WaitReady(t, cs[2].cs, ns, "app")
	r := env.Podsync(t, 3*time.Minute, "--context", all, "-n", ns, "--until", "ready", "--timeout", "2m", "-o", "json", "-v=1")
	wantExit(t, r, 4)
	took := harness.SinceClock(t, r)
	if took > time.Minute {
		t.Errorf("the failure took %s: not at once", took)
	}
	t.Logf("failed %s after the command's clock started", took.Round(time.Millisecond))
	wantStderr(t, r, "Verdict:  failed (exit 4)",
		`Reason:   context podsync-2: pod `+ns+`/app: container "app" is CrashLoopBackOff`,
		"Pod "+ns+"/app in context podsync-2 is not satisfied:")
	// The failure ends the check at once, also before the other clusters'
	// lists are in: each of them is met, or says its list was not complete.
	others := `(met\s+1 pod\s+all 1 matching pods satisfy ready|not met\s+[01] pods?\s+the initial list of pods was not complete yet)`
	if !regexp.MustCompile(`(?m)^Contexts: podsync-1  ` + others + `\n {10}podsync-2  failed\s+1 pod\s+pod ` + ns + `/app: container "app" is CrashLoopBackOff.*\n {10}podsync-3  ` + others + `\n`).MatchString(r.Stderr) {
		t.Errorf("the summary's context lines:\n%s", r)
	}
	lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
	var sum struct {
		Verdict  string
		Contexts []struct {
			Name, Verdict, Reason string
			Pods                  int
		}
		Unsatisfied []struct{ Context, Name string }
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("the JSON summary: %v\n%s", err, r)
	}
	if len(sum.Contexts) != 3 {
		t.Fatalf("JSON summary contexts %+v", sum.Contexts)
	}
	got := fmt.Sprintf("%s %s %s %d %+v", sum.Verdict, sum.Contexts[1].Name, sum.Contexts[1].Verdict, sum.Contexts[1].Pods, sum.Unsatisfied)
	if want := "failed podsync-2 failed 1 [{Context:podsync-2 Name:app}]"; got != want || !strings.Contains(sum.Contexts[1].Reason, "CrashLoopBackOff") {
		t.Errorf("JSON summary\n got %s\nwant %s", got, want)
	}
	for _, i := range []int{0, 2} {
		if c := sum.Contexts[i]; c.Name != env.Contexts[i] || c.Verdict != "met" && c.Verdict != "not met" {
			t.Errorf("JSON summary context %+v", c)
		}
	}
	wantLines(t, r.Stdout, `^\{"type":"(SYNC|UPDATE)","context":"podsync-2","object":\{"kind":"Pod".*"reason":"CrashLoopBackOff"`, 1)
}

// A timeout explains the unsatisfied pods of each context.
func TestTimeoutExplainsEachContext(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	cs := appInStates(t, ns, "", localcluster.StateNeverReady, localcluster.StateNeverReady)
	harness.WaitReady(t, cs[0].cs, ns, "app")
	r := env.Podsync(t, 2*time.Minute, "--context", all, "-n", ns, "--until", "ready", "--timeout", "15s")
	wantExit(t, r, 3)
	wantStderr(t, r, "Verdict:  not met (exit 3)", "Reason:   context podsync-2: 1 of 1 matching pods do not satisfy ready\n",
		"Contexts: podsync-1  met      1 pod  all 1 matching pods satisfy ready\n"+
			"          podsync-2  not met  1 pod  1 of 1 matching pods do not satisfy ready\n"+
			"          podsync-3  not met  1 pod  1 of 1 matching pods do not satisfy ready\n",
		"Pod "+ns+"/app in context podsync-2 is not satisfied:\n  Phase:  Running\n  Unmet:  ready: want Ready=True, got Ready=False",
		"Pod "+ns+"/app in context podsync-3 is not satisfied:\n  Phase:  Running\n  Unmet:  ready: want Ready=True, got Ready=False")
	if strings.Contains(r.Stderr, "in context podsync-1 is not satisfied") {
		t.Errorf("the met context's pod is explained:\n%s", r)
	}
}

// appInStates creates a pod app in ns of each cluster, in the kwok state
// given for it ("": a pod that gets ready).
func appInStates(t *testing.T, ns string, states ...string) []cluster {
	t.Helper()
	cs := clusters(t)
	for i, c := range cs {
		var ann map[string]string
		if states[i] != "" {
			ann = map[string]string{localcluster.StateAnnotation: states[i]}
		}
		createPod(t, c.cs, ns, pod("app", ann))
	}
	return cs
}

// A workload target is judged in every context, in the context's own
// namespace, with a summary line for each; a context without the workload
// keeps the gate from being met.
func TestWorkloadTargetInEveryContext(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	cs := clusters(t)
	for i, c := range cs {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := c.cs.AppsV1().Deployments(ns).Create(ctx, deployment("web", "registry.example/web:1", 2), metav1.CreateOptions{})
		if err == nil && i < 2 {
			_, err = c.cs.AppsV1().Deployments(ns).Create(ctx, deployment("api", "registry.example/api:1", 1), metav1.CreateOptions{})
		}
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	r := env.Podsync(t, 3*time.Minute, "--context", all, "-n", ns, "deploy/web", "--until", "healthy", "--timeout", "2m")
	wantExit(t, r, 0)
	for _, c := range env.Contexts {
		wantStderr(t, r, "deployment/web --context "+c+": rolled out 2/2")
		if n := harness.CountLines(r.Stdout, `^(SYNC|ADD|UPDATE)\s+`+c+`\s+web-\S+\s+1/1\s+Running\s`); n < 2 {
			t.Errorf("context %s: %d lines show a ready pod of deployment/web, want at least 2\n%s", c, n, r.Stdout)
		}
	}
	r = env.Podsync(t, 2*time.Minute, "--context", all, "-n", ns, "deploy/api", "--until", "healthy", "--timeout", "20s")
	wantExit(t, r, 3)
	wantStderr(t, r, "deployment/api --context podsync-1: rolled out 1/1",
		"deployment/api --context podsync-3: not met: ")
	if strings.Contains(r.Stdout, " web-") {
		t.Errorf("the pods of deployment/web are shown for deployment/api:\n%s", r.Stdout)
	}
}
