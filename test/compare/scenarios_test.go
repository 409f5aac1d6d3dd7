package compare

import (
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// The scenarios, by family. A Deployment's check is `deploy/NAME --until
// ready` beside `kubectl rollout status`; a Job's `job/NAME --until
// healthy` beside `kubectl wait --for=condition=...`.
func scenarios() []scenario {
	var all []scenario
	for _, family := range [][]scenario{deployments(), fixForward(), statefulSets(), daemonSets(), jobs(), gone(), manifests(), selectors(), evictions()} {
		all = append(all, family...)
	}
	return all
}

// rollout is podsync's check of the workload and kubectl rollout status.
func rollout(name string, w workload, prepare func(*testing.T, string)) scenario {
	return scenario{
		name: name, prepare: prepare,
		podsync: []string{w.target(), "--until", "ready"},
		kubectl: []string{"rollout", "status", w.target()},
	}
}

func deployments() []scenario {
	web := deployment("web", 3)
	maxUnavailable0 := deployment("web", 3, "strategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 0, maxSurge: 1}}")
	minReady := deployment("web", 2, "minReadySeconds: 5")
	paused := func(t *testing.T, ns string) {
		deployed(t, ns, web)
		env.Kubectl(t, "rollout", "pause", "-n", ns, web.target())
		setImage(t, ns, web, 2)
	}

	neverResumed := rollout("Deployment: paused mid-rollout, never resumed", web, paused)
	neverResumed.says, neverResumed.want = waits, 3
	neverResumed.stderr = []string{"deployment/web is paused mid-rollout", "Targets:  deployment/web: not met: paused mid-rollout"}

	resumed := rollout("Deployment: paused mid-rollout, resumed 5 s later", web, paused)
	resumed.during = func(t *testing.T, ns string) {
		time.Sleep(5 * time.Second)
		env.Kubectl(t, "rollout", "resume", "-n", ns, web.target())
	}

	slow := deployment("slow", 1, "progressDeadlineSeconds: 10").in(localcluster.StateNeverReady)
	deadline := rollout("Deployment: past its progress deadline (10 s, pod never ready)", slow, func(t *testing.T, ns string) { apply(t, ns, slow) })
	deadline.want, deadline.stderr = 4, []string{"ProgressDeadlineExceeded"}

	// The kubelet reports the readiness probe failing (kwok's never-ready
	// stage writes its Unhealthy Event): podsync gives up once the probe's
	// budget is spent, 1 s × 3 failures + 2 s; kubectl waits for the
	// progress deadline, 600 s by default.
	unready := deployment("probed", 1).in(localcluster.StateNeverReady).probed("{httpGet: {path: /healthz, port: 8080}, periodSeconds: 1, failureThreshold: 3}")
	probe := rollout("Deployment: pod running, readiness probe never passes", unready, func(t *testing.T, ns string) { apply(t, ns, unready) })
	probe.says, probe.want = waits, 4
	probe.stderr = []string{`is still not ready past its probe budget of 5s: Readiness probe failed: HTTP probe failed with statuscode: 503`}

	rolledBack := rollout("Deployment: rolled back mid-rollout", minReady, func(t *testing.T, ns string) {
		deployed(t, ns, minReady)
		setImage(t, ns, minReady, 2)
		waitImage(t, ns, "web", image("web", 2))
		env.Kubectl(t, "rollout", "undo", "-n", ns, minReady.target())
	})

	scaled := rollout("Deployment: scaled from 3 to 5 mid-rollout", web, updated(web))
	scaled.during = func(t *testing.T, ns string) {
		time.Sleep(2 * time.Second)
		scale(t, ns, web, 5)
	}

	foreign := rollout("Deployment: a crash-looping pod it does not own matches its labels", deployment("web", 2), func(t *testing.T, ns string) {
		apply(t, ns, deployment("web", 2))
		env.Apply(t, ns, barePod("debug", "web", localcluster.StateCrashLoop))
	})

	var crash []scenario
	for _, st := range []string{localcluster.StateCrashLoop, localcluster.StateImagePullBackOff} {
		w := deployment("web", 1).in(st)
		sc := rollout("Deployment: new pods in "+st+", never fixed", w, func(t *testing.T, ns string) { apply(t, ns, w) })
		sc.says, sc.want = waits, 4
		crash = append(crash, sc)
	}

	// Ready at t, crash at t+10 s: kubectl rollout status passes at t;
	// podsync --stable-for 30s keeps judging and fails at the restart.
	one := deployment("web", 1)
	crashAfter := rollout("Deployment: ready, then a crash 10 s later (--stable-for 30s)", one, updated(one))
	crashAfter.podsync = append(crashAfter.podsync, "--stable-for", "30s")
	crashAfter.during = crashAfterReady(one, 10*time.Second)
	crashAfter.want, crashAfter.keepsJudging = 4, true
	crashAfter.stderr = []string{`: container "app" restarted `, ` into --stable-for 30s (restarts 0 -> 1)`,
		"Stable:   broken "}

	late := scenario{
		name: "Deployment and Job created 3 s after the start",
		during: func(t *testing.T, ns string) {
			time.Sleep(3 * time.Second)
			apply(t, ns, deployment("late", 2), job("later"))
		},
		podsync: []string{"deploy/late", "job/later", "--until", "healthy"},
		kubectl: []string{"rollout", "status", "deployment/late"},
		says:    refuses, refusal: `deployments.apps "late" not found`,
	}

	return append([]scenario{
		rollout("Deployment: image update", web, updated(web)),
		rollout("Deployment: image update with maxUnavailable 0", maxUnavailable0, updated(maxUnavailable0)),
		rollout("Deployment: image update with minReadySeconds 5", minReady, updated(minReady)),
		neverResumed, resumed, deadline, probe, rolledBack, scaled, foreign, late, crashAfter,
	}, crash...)
}

// crashAfterReady waits until the workload's one pod at version 2 is
// ready, then, after, makes it crash-loop.
func crashAfterReady(w workload, after time.Duration) func(*testing.T, string) {
	return func(t *testing.T, ns string) {
		img := image(w.name, 2)
		waitPods(t, ns, w.name, 1, "ready at "+img, func(p *corev1.Pod) bool {
			return p.Spec.Containers[0].Image == img && harness.IsReady(p)
		})
		time.Sleep(after)
		for _, p := range pods(t, ns, w.name) {
			if p.Spec.Containers[0].Image != img || p.DeletionTimestamp != nil {
				continue
			}
			env.Kubectl(t, "annotate", "-n", ns, "pod/"+p.Name, localcluster.StateAnnotation+"="+localcluster.StateCrashLoop)
		}
	}
}

// fixForward: a Deployment or DaemonSet whose pods are broken, fixed by a
// new version; the check starts right after the fix.
func fixForward() []scenario {
	var out []scenario
	for _, c := range []struct {
		kind, state string
		flags       []string
	}{
		{"Deployment", localcluster.StateCrashLoop, nil},
		{"Deployment", localcluster.StateImagePullBackOff, nil},
		{"Deployment", localcluster.StateCrashLoop, []string{"--max-restarts", "0"}},
		{"DaemonSet", localcluster.StateCrashLoop, nil},
	} {
		w, n := deployment("web", 2), 2
		if c.kind == "DaemonSet" {
			w, n = daemonSet("agent"), 3
		}
		sc := rollout(c.kind+": fix rolled out over pods in "+c.state, w, func(t *testing.T, ns string) {
			apply(t, ns, w.in(c.state))
			waitPods(t, ns, w.name, n, "broken", broken)
			apply(t, ns, w.at(2))
		})
		if c.flags != nil {
			sc.name += ", " + c.flags[0] + " " + c.flags[1]
			sc.podsync = append(sc.podsync, c.flags...)
		}
		out = append(out, sc)
	}
	return out
}

func statefulSets() []scenario {
	db := statefulSet("db", 3)
	partitioned := statefulSet("db", 3, "updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}")
	slow := statefulSet("db", 3, "minReadySeconds: 5")
	onDelete := statefulSet("cache", 2, "updateStrategy: {type: OnDelete}")
	small, big := statefulSet("db", 2), statefulSet("db", 4)

	od := rollout("StatefulSet: OnDelete, new image set", onDelete, func(t *testing.T, ns string) {
		// kubectl rollout status refuses OnDelete: the pods tell.
		apply(t, ns, onDelete)
		waitPods(t, ns, onDelete.name, 2, "ready", harness.IsReady)
		setImage(t, ns, onDelete, 2)
	})
	od.says, od.refusal = refuses, "rollout status is only available for RollingUpdate strategy type"
	od.stderr = []string{"statefulset/cache updates its pods OnDelete: it is judged on its pods only"}

	return []scenario{
		rollout("StatefulSet: image update", db, updated(db)),
		rollout("StatefulSet: image update with partition 2 of 3", partitioned, updated(partitioned)),
		rollout("StatefulSet: rolled back mid-rollout", slow, func(t *testing.T, ns string) {
			deployed(t, ns, slow)
			setImage(t, ns, slow, 2)
			waitImage(t, ns, "db", image("db", 2))
			env.Kubectl(t, "rollout", "undo", "-n", ns, slow.target())
		}),
		od,
		rollout("StatefulSet: scaled up from 2 to 4", small, func(t *testing.T, ns string) {
			deployed(t, ns, small)
			scale(t, ns, small, 4)
		}),
		rollout("StatefulSet: scaled down from 4 to 2", big, func(t *testing.T, ns string) {
			deployed(t, ns, big)
			scale(t, ns, big, 2)
		}),
	}
}

func daemonSets() []scenario {
	agent := daemonSet("agent")
	return []scenario{rollout("DaemonSet: image update on the 3 nodes", agent, updated(agent))}
}

func jobs() []scenario {
	wait := func(name, cond string, w workload, prepare func(*testing.T, string)) scenario {
		return scenario{
			name: name, prepare: prepare,
			podsync: []string{w.target(), "--until", "healthy"},
			kubectl: []string{"wait", "--for=condition=" + cond, w.target()},
		}
	}
	report, broken := job("report"), job("broken").in(localcluster.StateError)
	suspended := job("report", "suspend: true")

	failed := wait("Job: fails (backoffLimit 0)", "Failed", broken, func(t *testing.T, ns string) { apply(t, ns, broken) })
	failed.want, failed.kubectlMeansFailed = 4, true
	failed.stderr = []string{"Targets:  job/broken: failed: BackoffLimitExceeded"}

	susp := wait("Job: suspended", "Complete", suspended, func(t *testing.T, ns string) { apply(t, ns, suspended) })
	susp.says, susp.want = waits, 3
	susp.stderr = []string{"job/report: suspended: "}

	return []scenario{
		wait("Job: completes", "Complete", report, func(t *testing.T, ns string) { apply(t, ns, report) }),
		failed, susp,
	}
}

// gone: a workload deleted before the check, its pods held a few seconds
// by a finalizer; and a Deployment scaled to zero, by selector.
func gone() []scenario {
	web := deployment("web", 3).held()
	deleted := func(name string, target ...string) scenario {
		return scenario{
			name: name,
			prepare: func(t *testing.T, ns string) {
				deployed(t, ns, web)
				if err := os.WriteFile(manifestPath(ns), []byte(web.yaml()), 0o644); err != nil {
					t.Fatal(err)
				}
				env.Kubectl(t, "delete", "-n", ns, web.target(), "--wait=false")
			},
			during: func(t *testing.T, ns string) {
				time.Sleep(5 * time.Second)
				releasePods(t, ns, "web")
			},
			podsync: append(target, "--until", "gone"),
			kubectl: []string{"wait", "--for=delete", "pod", "-l", "app=web"},
		}
	}
	toZero := deployment("batch", 2)
	return []scenario{
		deleted("Deployment deleted before the check, --until gone", "deploy/web"),
		deleted("Deployment deleted before the check, -f its manifest --until gone", "-f", manifestArg),
		{
			name: "Deployment scaled to zero, -l --until gone",
			prepare: func(t *testing.T, ns string) {
				deployed(t, ns, toZero)
				scale(t, ns, toZero, 0)
			},
			podsync: []string{"-l", "app=batch", "--until", "gone"},
			kubectl: []string{"wait", "--for=delete", "pod", "-l", "app=batch"},
		},
	}
}

// manifests: input that holds no object is a usage error, never a success;
// a kind the cluster does not serve is never met; and a user who may not
// list pods.
func manifests() []scenario {
	// kubectl judges no workload either: it passes on no object at all,
	// and fails on a kind it cannot decode.
	empty := scenario{
		name: "-f - holding nothing (a generator that failed)", stdin: "",
		podsync: []string{"-f", "-", "--until", "ready"},
		kubectl: []string{"rollout", "status", "-f", "-"},
		want:    2, stderr: []string{"error: nothing to judge: -f - held no object"}, onlyStderr: true,
		says: refuses, refusal: "No resources found",
	}
	custom := scenario{
		name: "-f - holding only a custom resource the cluster does not serve", stdin: "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 3}\n",
		podsync: []string{"-f", "-", "--until", "ready"},
		kubectl: []string{"rollout", "status", "-f", "-"},
		want:    3, stderr: []string{"widget.example.com/w: not met: the cluster does not serve example.com/v1"},
		says: refuses, refusal: `no kind "Widget" is registered`,
	}
	forbidden := rollout("user forbidden to list pods", deployment("shop", 1), func(t *testing.T, ns string) { apply(t, ns, deployment("shop", 1)) })
	forbidden.podsync = append(forbidden.podsync, "--context="+localcluster.RestrictedContext)
	forbidden.kubectl = append(forbidden.kubectl, "--context="+localcluster.RestrictedContext)
	forbidden.want = 1
	return []scenario{empty, custom, forbidden}
}

// selectors: plain -l selection, judged on the pods the selector matches,
// beside the kubectl command a pipeline would use instead.
func selectors() []scenario {
	web, done, slow := deployment("web", 3), job("done"), deployment("slow", 1).in(localcluster.StateNeverReady)
	never := scenario{
		name: "-l: a pod that never becomes ready", prepare: func(t *testing.T, ns string) { apply(t, ns, slow) },
		podsync: []string{"-l", "app=slow", "--until", "ready"},
		kubectl: []string{"rollout", "status", slow.target()},
		says:    waits, want: 3,
		stderr: []string{"Unmet:  ready: want Ready=True, got Ready=False"},
	}
	return []scenario{
		{
			name: "-l: rollout, check started right after set image", prepare: updated(web),
			podsync: []string{"-l", "app=web", "--until", "healthy"},
			kubectl: []string{"rollout", "status", web.target()},
		},
		{
			name: "-l: Job already completed, --until healthy",
			prepare: func(t *testing.T, ns string) {
				apply(t, ns, done)
				env.Kubectl(t, "wait", "-n", ns, "--for=condition=Complete", done.target(), "--timeout="+settle.String())
			},
			podsync: []string{"-l", "app=done", "--until", "healthy"},
			kubectl: []string{"wait", "--for=condition=Complete", done.target()},
		},
		never,
	}
}
