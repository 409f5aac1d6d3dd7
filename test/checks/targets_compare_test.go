package checks

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// TestCompareTargetsWithKubectl runs podsync's check of workload targets
// (TYPE/NAME, -f) next to `kubectl rollout status` and `kubectl wait
// --for=condition=Complete` on the same scenario, started at the same
// moment, and prints a table of exit codes and times to verdict. Like
// TestCompareWithKubectl it runs only with PODSYNC_COMPARE=1;
// PODSYNC_COMPARE_TARGETS_OUT=FILE also writes the table there.
func TestCompareTargetsWithKubectl(t *testing.T) {
	compare(t, targetScenarios(), "PODSYNC_COMPARE_TARGETS_OUT", time.Second)
}

// manifestFile is where a scenario's manifest is written, for -f.
func manifestFile(ns string) string { return filepath.Join(env.Tmp, ns+".yaml") }

func rolloutStatus(ns, target string) tool { return kubectl(ns, "rollout", "status", target) }

// updating applies a workload, waits for its rollout, then sets a new
// image: the check starts on a rollout just begun.
func updating(yaml, target, image string) func(*testing.T, string) {
	return func(t *testing.T, ns string) {
		env.Apply(t, ns, yaml)
		env.Kubectl(t, "rollout", "status", "-n", ns, target, "--timeout="+settle.String())
		env.Kubectl(t, "set", "image", "-n", ns, target, "app="+image)
	}
}

func targetScenarios() []scenario {
	return []scenario{
		{
			name:    "Deployment: new version, check started right after set image",
			prepare: updating(deploymentYAML("web", "registry.example/web:1", 3, nil), "deployment/web", "registry.example/web:2"),
			tools: func(ns string) []tool {
				return []tool{podsync(ns, "deploy/web", "--until", "healthy"), rolloutStatus(ns, "deployment/web")}
			},
		},
		{
			name:    "Deployment: paused after set image, resumed 5 s later",
			prepare: func(t *testing.T, ns string) { pausedMidRollout(t, ns, "api") },
			during: func(t *testing.T, ns string) {
				time.Sleep(5 * time.Second)
				env.Kubectl(t, "rollout", "resume", "-n", ns, "deployment/api")
			},
			tools: func(ns string) []tool {
				return []tool{podsync(ns, "deploy/api", "--until", "ready"), rolloutStatus(ns, "deployment/api")}
			},
		},
		{
			name: "Deployment past its progress deadline (10 s, pod never ready)",
			prepare: func(t *testing.T, ns string) {
				env.Apply(t, ns, withSpec(deploymentYAML("slow", "registry.example/slow:1", 1, state(localcluster.StateNeverReady)), "progressDeadlineSeconds: 10"))
			},
			tools: func(ns string) []tool {
				return []tool{podsync(ns, "deploy/slow", "--until", "ready"), rolloutStatus(ns, "deployment/slow")}
			},
			podsync: 4,
		},
		targetBroken("Deployment: crash-looping container", "crash", localcluster.StateCrashLoop),
		targetBroken("Deployment: image that cannot be pulled", "pull", localcluster.StateImagePullBackOff),
		{
			name:    "StatefulSet: rolling update with partition 2 of 3",
			prepare: updating(statefulSetYAML("db", "registry.example/db:1", 3, "RollingUpdate", 2), "statefulset/db", "registry.example/db:2"),
			tools: func(ns string) []tool {
				return []tool{podsync(ns, "sts/db", "--until", "ready"), rolloutStatus(ns, "statefulset/db")}
			},
		},
		{
			name:    "StatefulSet: rolling update of 3 pods",
			prepare: updating(statefulSetYAML("db", "registry.example/db:1", 3, "RollingUpdate", 0), "statefulset/db", "registry.example/db:2"),
			tools: func(ns string) []tool {
				return []tool{podsync(ns, "sts/db", "--until", "ready"), rolloutStatus(ns, "statefulset/db")}
			},
		},
		{
			name: "StatefulSet: OnDelete, new image set",
			prepare: func(t *testing.T, ns string) {
				env.Apply(t, ns, statefulSetYAML("cache", "registry.example/cache:1", 2, "OnDelete", 0))
				waitPods(t, ns, "app=cache", 2, "ready", harness.IsReady)
				env.Kubectl(t, "set", "image", "-n", ns, "statefulset/cache", "app=registry.example/cache:2")
			},
			tools: func(ns string) []tool {
				return []tool{podsync(ns, "sts/cache", "--until", "ready"), rolloutStatus(ns, "statefulset/cache")}
			},
		},
		{
			name:    "DaemonSet: new version on the 3 kwok nodes",
			prepare: updating(daemonSetYAML("agent", "registry.example/agent:1"), "daemonset/agent", "registry.example/agent:2"),
			tools: func(ns string) []tool {
				return []tool{podsync(ns, "ds/agent", "--until", "ready"), rolloutStatus(ns, "daemonset/agent")}
			},
		},
		{
			name: "Job that succeeds (started with the Job)",
			prepare: func(t *testing.T, ns string) {
				env.Apply(t, ns, jobYAML("report", nil))
			},
			tools: func(ns string) []tool {
				return []tool{podsync(ns, "job/report", "--until", "healthy"),
					kubectl(ns, "wait", "--for=condition=Complete", "job/report")}
			},
		},
		{
			name: "Job that fails (backoffLimit 0)",
			prepare: func(t *testing.T, ns string) {
				env.Apply(t, ns, jobYAML("broken", state(localcluster.StateError)))
			},
			tools: func(ns string) []tool {
				return []tool{podsync(ns, "job/broken", "--until", "healthy"),
					kubectl(ns, "wait", "--for=condition=Complete", "job/broken"),
					kubectl(ns, "wait", "--for=condition=Failed", "job/broken")}
			},
			podsync: 4,
		},
		{
			name: "Deployment and Job created 3 s after the start",
			during: func(t *testing.T, ns string) {
				time.Sleep(3 * time.Second)
				env.Apply(t, ns, deploymentYAML("late", "registry.example/late:1", 2, nil))
				env.Apply(t, ns, jobYAML("later", nil))
			},
			tools: func(ns string) []tool {
				return []tool{podsync(ns, "deploy/late", "job/later", "--until", "healthy"), rolloutStatus(ns, "deployment/late"),
					kubectl(ns, "wait", "--for=condition=Complete", "job/later")}
			},
		},
		{
			name: "manifest (Deployment, Service, Job, ConfigMap) applied 3 s after the start",
			prepare: func(t *testing.T, ns string) {
				if err := os.WriteFile(manifestFile(ns), []byte(manifest()), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			during: func(t *testing.T, ns string) {
				time.Sleep(3 * time.Second)
				env.Apply(t, ns, manifest())
			},
			tools: func(ns string) []tool {
				p, k := podsync(ns, "-f", manifestFile(ns), "--until", "healthy"), rolloutStatus(ns, "-f="+manifestFile(ns))
				p.name, k.name = "kubectl podsync -f manifest.yaml --until healthy", "kubectl rollout status -f manifest.yaml"
				return []tool{p, k}
			},
		},
	}
}

// targetBroken is a one-pod Deployment put in a broken state: podsync's
// check of the Deployment fails at once.
func targetBroken(title, name, st string) scenario {
	return scenario{
		name:    title,
		prepare: deployed(name, 1, state(st)),
		tools: func(ns string) []tool {
			return []tool{podsync(ns, "deploy/"+name, "--until", "ready"), rolloutStatus(ns, "deployment/"+name)}
		},
		podsync: 4,
	}
}
