package checks

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// compareTimeout is the --timeout of every tool in the comparison: long
// enough for a rollout on a busy machine, short enough to wait for the
// tools that only stop at their timeout.
const compareTimeout = "40s"

// tool is one command of a comparison, run as `kubectl ARGS`.
type tool struct {
	name string
	args []string
}

// scenario is one situation a CI job waits on. prepare brings the cluster
// to the starting point; the tools then start together, and during (if
// set) changes the cluster while they run.
type scenario struct {
	name    string
	prepare func(t *testing.T, ns string)
	during  func(t *testing.T, ns string)
	tools   func(ns string) []tool
	// podsync is the exit code podsync (the first tool) must give.
	podsync int
}

// TestCompareWithKubectl runs podsync's check next to the closest
// `kubectl wait` and `kubectl rollout status` on the same cluster and the
// same scenario, started at the same moment, and prints a table of exit
// codes and times to verdict. It takes several minutes, mostly spent in
// kubectl waiting for its --timeout, so it only runs with PODSYNC_COMPARE=1;
// PODSYNC_COMPARE_OUT=FILE also writes the table there.
func TestCompareWithKubectl(t *testing.T) {
	compare(t, scenarios(), "PODSYNC_COMPARE_OUT", 0)
}

// compare runs each scenario's tools together and tables their exit codes
// and times; the table is logged, and written to the file $outVar names.
// With within set, a success of podsync that kubectl (the second tool)
// also met must come at most within after kubectl's.
func compare(t *testing.T, scs []scenario, outVar string, within time.Duration) {
	if os.Getenv("PODSYNC_COMPARE") != "1" {
		t.Skip("set PODSYNC_COMPARE=1 to compare with kubectl wait and kubectl rollout status (several minutes)")
	}
	var table strings.Builder
	table.WriteString("| scenario | command | exit | time to verdict |\n|---|---|---|---|\n")
	for _, sc := range scs {
		t.Run(sc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			if sc.prepare != nil {
				sc.prepare(t, ns)
			}
			tools := sc.tools(ns)
			results := runTogether(env, tools, sc.during, t, ns)
			for i, r := range results {
				t.Logf("%s: exit %d after %s\n%s", tools[i].name, r.Code, r.Took.Round(100*time.Millisecond), lastLines(r.Stderr+r.Stdout, 3))
				fmt.Fprintf(&table, "| %s | `%s` | %d | %s |\n", sc.name, tools[i].name, r.Code, r.Took.Round(100*time.Millisecond))
			}
			if results[0].Code != sc.podsync {
				t.Errorf("podsync exit %d, want %d\n%s", results[0].Code, sc.podsync, results[0])
			}
			if within > 0 && sc.podsync == 0 && results[1].Code == 0 && results[0].Took > results[1].Took+within {
				t.Errorf("podsync met after %s, kubectl after %s: more than %s later", results[0].Took, results[1].Took, within)
			}
		})
	}
	t.Logf("comparison with kubectl (timeouts %s):\n%s", compareTimeout, table.String())
	if out := os.Getenv(outVar); out != "" {
		if err := os.WriteFile(out, []byte(table.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

func scenarios() []scenario {
	return []scenario{
		{
			name: "rollout: new version, check started right after set image",
			prepare: func(t *testing.T, ns string) {
				env.Apply(t, ns, deploymentYAML("web", "registry.example/web:1", 3, nil))
				rolledOut(t, ns, "web")
				env.Kubectl(t, "set", "image", "-n", ns, "deployment/web", "app=registry.example/web:2")
			},
			tools: func(ns string) []tool {
				return []tool{podsync(ns, "-l", "app=web", "--until", "healthy"),
					kubectl(ns, "rollout", "status", "deployment/web"), waitReady(ns, "app=web")}
			},
		},
		{
			name: "rollout: paused after set image, resumed 5 s later",
			prepare: func(t *testing.T, ns string) {
				env.Apply(t, ns, deploymentYAML("api", "registry.example/api:1", 2, nil))
				rolledOut(t, ns, "api")
				env.Kubectl(t, "rollout", "pause", "-n", ns, "deployment/api")
				env.Kubectl(t, "set", "image", "-n", ns, "deployment/api", "app=registry.example/api:2")
			},
			during: func(t *testing.T, ns string) {
				time.Sleep(5 * time.Second)
				env.Kubectl(t, "rollout", "resume", "-n", ns, "deployment/api")
			},
			tools: func(ns string) []tool {
				return []tool{podsync(ns, "-l", "app=api", "--until", "ready"),
					kubectl(ns, "rollout", "status", "deployment/api"), waitReady(ns, "app=api")}
			},
		},
		{
			name: "pods that do not exist yet (Deployment created 3 s after the start)",
			during: func(t *testing.T, ns string) {
				time.Sleep(3 * time.Second)
				env.Apply(t, ns, deploymentYAML("late", "registry.example/late:1", 2, nil))
			},
			tools: func(ns string) []tool {
				return []tool{podsync(ns, "-l", "app=late", "--until", "ready"),
					kubectl(ns, "rollout", "status", "deployment/late"), waitReady(ns, "app=late")}
			},
		},
		brokenDeployment("crash-looping container", "crash", localcluster.StateCrashLoop, 4),
		brokenDeployment("image that cannot be pulled", "pull", localcluster.StateImagePullBackOff, 4),
		brokenDeployment("pod never ready", "slow", localcluster.StateNeverReady, 3),
		{
			name: "Job that succeeds (started with the Job)",
			prepare: func(t *testing.T, ns string) {
				env.Apply(t, ns, jobYAML("report", nil))
			},
			tools: func(ns string) []tool {
				return []tool{podsync(ns, "-l", "app=report", "--until", "succeeded"),
					kubectl(ns, "wait", "--for=condition=Complete", "job/report"), waitReady(ns, "app=report")}
			},
		},
		{
			name: "Job already completed",
			prepare: func(t *testing.T, ns string) {
				env.Apply(t, ns, jobYAML("done", nil))
				waitPods(t, ns, "app=done", 1, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
				wantCompletedUnready(t, ns, pods(t, ns, "app=done")[0].Name)
			},
			tools: func(ns string) []tool {
				return []tool{podsync(ns, "-l", "app=done", "--until", "healthy"),
					kubectl(ns, "wait", "--for=condition=Complete", "job/done"), waitReady(ns, "app=done")}
			},
		},
		{
			name: "Job that fails",
			prepare: func(t *testing.T, ns string) {
				env.Apply(t, ns, jobYAML("broken", state(localcluster.StateError)))
				waitPods(t, ns, "app=broken", 1, "scheduled", func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
			},
			tools: func(ns string) []tool {
				return []tool{podsync(ns, "-l", "app=broken", "--until", "succeeded"),
					kubectl(ns, "wait", "--for=condition=Complete", "job/broken"), waitReady(ns, "app=broken")}
			},
			podsync: 4,
		},
		{
			name: "scale to zero",
			prepare: func(t *testing.T, ns string) {
				env.Apply(t, ns, deploymentYAML("batch", "registry.example/batch:1", 2, nil))
				rolledOut(t, ns, "batch")
				env.Kubectl(t, "scale", "-n", ns, "deployment/batch", "--replicas=0")
			},
			tools: func(ns string) []tool {
				return []tool{podsync(ns, "-l", "app=batch", "--until", "gone"),
					kubectl(ns, "wait", "--for=delete", "pod", "-l", "app=batch")}
			},
		},
		{
			name:    "user forbidden to list pods",
			prepare: deployed("shop", 1, nil),
			tools: func(ns string) []tool {
				ctx := "--context=" + localcluster.RestrictedContext
				return []tool{podsync(ns, ctx, "-l", "app=shop", "--until", "ready"),
					kubectl(ns, ctx, "rollout", "status", "deployment/shop"),
					kubectl(ns, ctx, "wait", "--for=condition=Ready", "pod", "-l", "app=shop")}
			},
			podsync: 1,
		},
	}
}

// runTogether starts every tool at the same moment, runs during (on the
// test goroutine) while they run, and returns their results in order.
func runTogether(e *harness.Env, tools []tool, during func(*testing.T, string), t *testing.T, ns string) []harness.Result {
	t.Helper()
	results := make([]harness.Result, len(tools))
	var wg sync.WaitGroup
	for i, tl := range tools {
		wg.Go(func() { results[i] = runTool(e, tl.args) })
	}
	if during != nil {
		during(t, ns)
	}
	wg.Wait()
	return results
}

// runTool runs `kubectl ARGS` to its end; each tool has its own --timeout,
// the context only guards against one that ignores it.
func runTool(e *harness.Env, args []string) harness.Result {
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	// The plugin under test is built with -race, whose runtime sleeps 1 s
	// before a successful exit: not part of the time to a verdict.
	cmd := e.Command(ctx, []string{"GORACE=atexit_sleep_ms=0"}, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	return harness.Result{Code: harness.ExitCode(err), Stdout: stdout.String(), Stderr: stderr.String(), Took: time.Since(start)}
}

// lastLines keeps the end of a tool's output for the log.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func deployed(name string, replicas int, annotations map[string]string) func(*testing.T, string) {
	return func(t *testing.T, ns string) {
		env.Apply(t, ns, deploymentYAML(name, "registry.example/"+name+":1", replicas, annotations))
		waitPods(t, ns, "app="+name, replicas, "scheduled", func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
	}
}

func podsync(ns string, args ...string) tool {
	all := append([]string{"podsync", "-n", ns}, args...)
	return tool{"kubectl podsync " + strings.Join(args, " "), append(all, "--timeout", compareTimeout)}
}

func kubectl(ns string, args ...string) tool {
	all := append(append([]string{}, args...), "-n", ns, "--timeout="+compareTimeout)
	return tool{"kubectl " + strings.Join(args, " "), all}
}

func waitReady(ns, selector string) tool {
	return kubectl(ns, "wait", "--for=condition=Ready", "pod", "-l", selector)
}

// brokenDeployment is a one-pod Deployment put in a broken state, where
// podsync's check for ready must end with want.
func brokenDeployment(title, name, st string, want int) scenario {
	return scenario{
		name:    title,
		prepare: deployed(name, 1, state(st)),
		tools: func(ns string) []tool {
			return []tool{podsync(ns, "-l", "app="+name, "--until", "ready"),
				kubectl(ns, "rollout", "status", "deployment/"+name), waitReady(ns, "app="+name)}
		},
		podsync: want,
	}
}
