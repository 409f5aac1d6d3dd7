package checks

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	pscheck "github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// earliest is how much sooner than kubectl podsync may report a success:
// two processes started together on a busy machine, never a verdict taken
// on a state kubectl does not call done.
const earliest = time.Second

// TestVerdictAgreesWithKubectl runs podsync's check of a workload next to
// `kubectl rollout status` (or `kubectl wait`) on situations where a gate
// is easy to get wrong: a fix rolled out over broken pods, a rollback
// mid-rollout, pods the workload does not own, a target already deleted.
// Each scenario runs in its own namespace, all of them at once. podsync's
// exit code must be the one given, equal to kubectl's when kubectl
// decides, and a success never more than `earliest` before kubectl's.
func TestVerdictAgreesWithKubectl(t *testing.T) {
	for _, sc := range verdictScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			if sc.prepare != nil {
				sc.prepare(t, ns)
			}
			tools := sc.tools(ns)
			results := runTogether(env, tools, sc.during, t, ns)
			for i, r := range results {
				t.Logf("%s: exit %d after %s\n%s", tools[i].name, r.Code, r.Took.Round(100*time.Millisecond), lastLines(r.Stderr+r.Stdout, 4))
			}
			agree(t, sc.podsync, results[0], results[1])
		})
	}
}

// agree checks podsync's result p against the wanted code and kubectl's k.
func agree(t *testing.T, want int, p, k harness.Result) {
	t.Helper()
	if p.Code != want {
		t.Errorf("podsync exit %d, want %d\n%s", p.Code, want, p)
	}
	if p.Code == 0 && k.Code != 0 {
		t.Errorf("podsync met the check, kubectl did not (exit %d)\n%s", k.Code, k)
	}
	if k.Code == 0 && p.Code == 0 && p.Took < k.Took-earliest {
		t.Errorf("podsync met the check after %s, kubectl after %s: more than %s before it", p.Took, k.Took, earliest)
	}
}

func verdictScenarios() []scenario {
	return []scenario{
		fixForward("Deployment: fix rolled out over crash-looping pods", "crash", localcluster.StateCrashLoop),
		fixForward("Deployment: fix rolled out over pods that cannot pull their image", "pull", localcluster.StateImagePullBackOff),
		fixForward("Deployment: fix over crash-looping pods, --max-restarts 0", "restarts", localcluster.StateCrashLoop, "--max-restarts", "0"),
		{
			name:    "StatefulSet: rolled back mid-rollout",
			prepare: rolledBackMidRollout,
			tools: func(ns string) []tool {
				return []tool{podsync(ns, "sts/db", "--until", "ready"), rolloutStatus(ns, "statefulset/db")}
			},
		},
		{
			name: "Deployment with a crash-looping pod it does not own but whose labels match",
			prepare: func(t *testing.T, ns string) {
				env.Apply(t, ns, deploymentYAML("web", "registry.example/web:1", 2, nil))
				env.Apply(t, ns, barePodYAML("debug", "web", state(localcluster.StateCrashLoop)))
			},
			tools: func(ns string) []tool {
				return []tool{podsync(ns, "deploy/web", "--until", "ready"), rolloutStatus(ns, "deployment/web")}
			},
		},
		deletedTarget("Deployment deleted before the check, --until gone", "deploy/web"),
		deletedTarget("manifest deleted before the check, -f --until gone", "-f"),
	}
}

// fixForward is a Deployment of two pods broken in state st, then fixed
// with a new image: the check starts right after the fix.
func fixForward(title, name, st string, flags ...string) scenario {
	return scenario{
		name: title,
		prepare: func(t *testing.T, ns string) {
			env.Apply(t, ns, deploymentYAML(name, "registry.example/"+name+":1", 2, state(st)))
			waitPods(t, ns, "app="+name, 2, "broken", broken)
			env.Apply(t, ns, deploymentYAML(name, "registry.example/"+name+":2", 2, nil))
		},
		tools: func(ns string) []tool {
			args := append([]string{"deploy/" + name, "--until", "ready"}, flags...)
			return []tool{podsync(ns, args...), rolloutStatus(ns, "deployment/"+name)}
		},
	}
}

// broken is true of a pod whose container has restarted or waits for a
// reason that --fail-on names by default.
func broken(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.RestartCount > 0 || cs.State.Waiting != nil && slices.Contains(pscheck.DefaultFailOn(), cs.State.Waiting.Reason) {
			return true
		}
	}
	return false
}

// rolledBackMidRollout rolls StatefulSet db of 3 pods out, starts a new
// version (slowed down by minReadySeconds), and undoes it once its first
// pod runs: a pod still runs the abandoned revision while the update
// revision is the current one again.
func rolledBackMidRollout(t *testing.T, ns string) {
	env.Apply(t, ns, withSpec(statefulSetYAML("db", "registry.example/db:1", 3, "RollingUpdate", 0), "minReadySeconds: 5"))
	env.Kubectl(t, "rollout", "status", "-n", ns, "statefulset/db", "--timeout="+settle.String())
	env.Kubectl(t, "set", "image", "-n", ns, "statefulset/db", "app=registry.example/db:2")
	harness.Eventually(t, settle, harness.Text("a pod of db at the new image"), func() bool {
		for _, p := range pods(t, ns, "app=db") {
			if p.Spec.Containers[0].Image == "registry.example/db:2" {
				return true
			}
		}
		return false
	})
	env.Kubectl(t, "rollout", "undo", "-n", ns, "statefulset/db")
}

// barePodYAML is a pod of no workload, labelled app=APP.
func barePodYAML(name, app string, annotations map[string]string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: {app: %s}
%sspec:
  containers:
  - name: app
    image: registry.example/debug:1
`, name, app, annotationsYAML("  ", annotations))
}

// deletedTarget deletes Deployment web of 3 pods without waiting for its
// pods, which a finalizer keeps for a few seconds: podsync is given
// deploy/web or its manifest (-f).
func deletedTarget(title, how string) scenario {
	return scenario{
		name: title,
		prepare: func(t *testing.T, ns string) {
			yaml := strings.Replace(deploymentYAML("web", "registry.example/web:1", 3, nil),
				"      labels: {app: web}\n", "      labels: {app: web}\n      finalizers: [podsync.test/hold]\n", 1)
			env.Apply(t, ns, yaml)
			if err := os.WriteFile(filepath.Join(env.Tmp, ns+"-web.yaml"), []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			rolledOut(t, ns, "web")
			env.Kubectl(t, "delete", "-n", ns, "deployment/web", "--wait=false")
		},
		during: func(t *testing.T, ns string) {
			time.Sleep(5 * time.Second)
			for _, p := range pods(t, ns, "app=web") {
				env.Kubectl(t, "patch", "-n", ns, "pod/"+p.Name, "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
			}
		},
		tools: func(ns string) []tool {
			target := []string{"deploy/web"}
			if how == "-f" {
				target = []string{"-f", filepath.Join(env.Tmp, ns+"-web.yaml")}
			}
			p := podsync(ns, append(target, "--until", "gone")...)
			return []tool{p, kubectl(ns, "wait", "--for=delete", "pod", "-l", "app=web")}
		},
	}
}

// TestNothingToJudge: a check whose input holds no object (an empty stdin
// from a generator that failed) is a usage error that says what was read,
// never a success; a manifest of only kinds the cluster does not serve is
// never met, and says why.
func TestNothingToJudge(t *testing.T) {
	ns := env.Namespace(t)
	r := withInput(t, "", "podsync", "-n", ns, "-f", "-", "--until", "ready", "--min-pods", "1", "--timeout", "30s")
	if want := "error: nothing to judge: -f - held no object"; r.Code != 2 || strings.TrimSpace(r.Stderr) != want {
		t.Errorf("exit %d, stderr %q; want exit 2 and %q\n%s", r.Code, r.Stderr, want, r)
	}
	custom := "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 3}\n"
	r = withInput(t, custom, "podsync", "-n", ns, "-f", "-", "--until", "ready", "--timeout", "3s")
	wantVerdict(t, r, 3, "not met")
	wantStderr(t, r, "widget.example.com/w: not met: the cluster does not serve example.com/v1")
}

// withInput runs `kubectl ARGS` with input on stdin.
func withInput(t *testing.T, input string, args ...string) harness.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	cmd := env.Command(ctx, nil, args...)
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	return harness.Result{Code: harness.ExitCode(err), Stdout: stdout.String(), Stderr: stderr.String(), Took: time.Since(start)}
}
