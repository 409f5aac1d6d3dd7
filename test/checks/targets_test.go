package checks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// The workloads as targets (TYPE/NAME, -f): each kind's rollout rule on
// top of the pod conditions, with the local cluster's controllers rolling
// them out for real and kwok playing the kubelet.

// workloadYAML is a workload of kind NAME whose pods are labelled app=NAME,
// with one container "app" running image, and spec's lines first in its
// spec.
func workloadYAML(kind, name, image string, spec ...string) string {
	var lines strings.Builder
	for _, l := range spec {
		lines.WriteString("  " + l + "\n")
	}
	return fmt.Sprintf(`apiVersion: apps/v1
kind: %[1]s
metadata:
  name: %[2]s
spec:
%[4]s  selector:
    matchLabels: {app: %[2]s}
  template:
    metadata:
      labels: {app: %[2]s}
    spec:
      containers:
      - name: app
        image: %[3]s
`, kind, name, image, lines.String())
}

// statefulSetYAML is a StatefulSet of replicas pods, updated with strategy
// (RollingUpdate with partition, or OnDelete).
func statefulSetYAML(name, image string, replicas int, strategy string, partition int) string {
	update := fmt.Sprintf("{type: RollingUpdate, rollingUpdate: {partition: %d}}", partition)
	if strategy == "OnDelete" {
		update = "{type: OnDelete}"
	}
	return workloadYAML("StatefulSet", name, image, fmt.Sprintf("replicas: %d", replicas), "updateStrategy: "+update)
}

// daemonSetYAML is a DaemonSet on every node.
func daemonSetYAML(name, image string) string { return workloadYAML("DaemonSet", name, image) }

// pausedMidRollout rolls out a Deployment NAME of two pods, pauses it and
// sets a new image: the rollout waits for a resume.
func pausedMidRollout(t *testing.T, ns, name string) {
	t.Helper()
	env.Apply(t, ns, deploymentYAML(name, "registry.example/"+name+":1", 2, nil))
	rolledOut(t, ns, name)
	env.Kubectl(t, "rollout", "pause", "-n", ns, "deployment/"+name)
	env.Kubectl(t, "set", "image", "-n", ns, "deployment/"+name, "app=registry.example/"+name+":2")
}

// withSpec puts a line into a workload's spec, after "spec:".
func withSpec(yaml, line string) string {
	return strings.Replace(yaml, "\nspec:\n", "\nspec:\n  "+line+"\n", 1)
}

// started is a podsync run in the background, with stdin when given.
type started struct {
	done <-chan harness.Result
}

func startPodsync(t *testing.T, stdin string, args ...string) started {
	t.Helper()
	done := make(chan harness.Result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), runLimit)
		defer cancel()
		cmd := env.Command(ctx, nil, append([]string{"podsync"}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if stdin != "" {
			cmd.Stdin = strings.NewReader(stdin)
		}
		begin := time.Now()
		err := cmd.Run()
		done <- harness.Result{Code: harness.ExitCode(err), Stdout: stdout.String(), Stderr: stderr.String(), Took: time.Since(begin)}
	}()
	return started{done: done}
}

func (s started) wait(t *testing.T) harness.Result {
	t.Helper()
	select {
	case r := <-s.done:
		return r
	case <-time.After(runLimit + time.Minute):
		t.Fatal("podsync did not end")
	}
	return harness.Result{}
}

// A rolling update of a Deployment target is met once the new ReplicaSet
// is rolled out; a crash loop or an image that cannot be pulled fails it
// at once, naming the target.
func TestTargetDeployment(t *testing.T) {
	t.Parallel()
	t.Run("rollout", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		env.Apply(t, ns, deploymentYAML("web", "registry.example/web:1", 3, nil))
		rolledOut(t, ns, "web")
		env.Kubectl(t, "set", "image", "-n", ns, "deployment/web", "app=registry.example/web:2")
		r := check(t, "-n", ns, "deploy/web", "--until", "healthy", "--timeout", "4m")
		wantVerdict(t, r, 0, "met")
		wantStderr(t, r, "Targets:  deployment/web: rolled out 3/3 in ", "and the target is met")
		wantOnlyCurrentPods(t, ns, "web", "registry.example/web:2", 3, r.Stdout)
		// --once judges what it listed, and asks for no watch of the
		// Deployment, its ReplicaSets or its pods.
		r = check(t, "-n", ns, "deploy/web", "--until", "healthy", "--once", "-v=6")
		wantVerdict(t, r, 0, "met")
		for _, line := range strings.Split(r.Stderr, "\n") {
			if strings.Contains(line, "watch=true") {
				t.Errorf("--once asked for a watch: %s", line)
			}
		}
	})
	for _, c := range []struct{ name, state, reason string }{
		{"crash", localcluster.StateCrashLoop, "CrashLoopBackOff"},
		{"pull", localcluster.StateImagePullBackOff, "ImagePull"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			env.Apply(t, ns, deploymentYAML(c.name, "registry.example/x:1", 1, state(c.state)))
			r := check(t, "-n", ns, "deployment/"+c.name, "--until", "ready", "--timeout", "4m")
			wantVerdict(t, r, 4, "failed")
			wantTook(t, r, 2*time.Minute)
			wantStderr(t, r, "Targets:  deployment/"+c.name+": failed: pod "+ns+"/"+c.name+"-", c.reason)
		})
	}
}

// A Deployment past its progress deadline fails the check at once, with
// the reason, when the controller says so.
func TestTargetDeploymentProgressDeadline(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, withSpec(deploymentYAML("slow", "registry.example/slow:1", 1, state(localcluster.StateNeverReady)), "progressDeadlineSeconds: 10"))
	r := check(t, "-n", ns, "deploy/slow", "--until", "ready", "--timeout", "4m")
	wantVerdict(t, r, 4, "failed")
	wantTook(t, r, 2*time.Minute)
	wantStderr(t, r, "Reason:   deployment "+ns+"/slow failed (ProgressDeadlineExceeded): ReplicaSet \"slow-",
		"Targets:  deployment/slow: failed: ProgressDeadlineExceeded: ", "Unmet:  ready: want Ready=True, got Ready=False")
}

// A Deployment paused mid-rollout holds the check, which says so once; it
// is met once the rollout, resumed, is done.
func TestTargetDeploymentPaused(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	pausedMidRollout(t, ns, "api")
	s := startWatching(t, "-n", ns, "deploy/api", "--until", "ready", "--timeout", "4m")
	s.WaitStderr(`podsync: deployment/api is paused mid-rollout \(0 of 2 replicas updated\); the check waits until it is resumed`, time.Minute)
	time.Sleep(3 * time.Second)
	if s.Exited() {
		t.Fatalf("the check ended while the Deployment was paused\n%s", s.Dump())
	}
	env.Kubectl(t, "rollout", "resume", "-n", ns, "deployment/api")
	r := s.Wait(runLimit)
	wantVerdict(t, r, 0, "met")
	wantStderr(t, r, "Targets:  deployment/api: rolled out 2/2 in ")
	wantOnlyCurrentPods(t, ns, "api", "registry.example/api:2", 2, strings.Join(s.Lines(), "\n"))
	if n := strings.Count(r.Stderr, "is paused mid-rollout"); n != 1 {
		t.Errorf("the pause was said %d times, want once\n%s", n, r)
	}
}

// A StatefulSet rolling update with a partition is met once the pods at and
// above the partition run the update revision; one updated OnDelete is
// judged on its pods only, which is said once.
func TestTargetStatefulSet(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, statefulSetYAML("db", "registry.example/db:1", 3, "RollingUpdate", 2))
	env.Apply(t, ns, statefulSetYAML("cache", "registry.example/cache:1", 2, "OnDelete", 0))
	r := check(t, "-n", ns, "sts/db", "statefulset/cache", "--until", "ready", "--timeout", "4m")
	wantVerdict(t, r, 0, "met")
	wantStderr(t, r, "Targets:  statefulset/db: rolled out 3/3 at revision db-", "          statefulset/cache: 2/2 pods ready in ",
		"podsync: statefulset/cache updates its pods OnDelete: it is judged on its pods only")

	env.Kubectl(t, "set", "image", "-n", ns, "statefulset/db", "app=registry.example/db:2")
	env.Kubectl(t, "set", "image", "-n", ns, "statefulset/cache", "app=registry.example/cache:2")
	r = check(t, "-n", ns, "sts/db", "sts/cache", "--until", "ready", "--timeout", "4m")
	wantVerdict(t, r, 0, "met")
	wantStderr(t, r, "Targets:  statefulset/db: rolled out to the partition: 1 of 3 pods at revision db-", "(partition 2)")
	if n := strings.Count(r.Stderr, "updates its pods OnDelete"); n != 1 {
		t.Errorf("OnDelete was said %d times, want once\n%s", n, r)
	}
	sts, err := env.Clientset(t).AppsV1().StatefulSets(ns).Get(context.Background(), "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods(t, ns, "app=db") {
		updated := p.Labels["controller-revision-hash"] == sts.Status.UpdateRevision
		if updated != (p.Name == "db-2") || !harness.IsReady(&p) {
			t.Errorf("after the verdict pod %s is at revision %s (update revision %s), ready %v; want only db-2 updated, all ready",
				p.Name, p.Labels["controller-revision-hash"], sts.Status.UpdateRevision, harness.IsReady(&p))
		}
	}
}

// A DaemonSet has an updated, ready pod on each of the kwok nodes, before
// and after an update.
func TestTargetDaemonSet(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, daemonSetYAML("agent", "registry.example/agent:1"))
	for i, image := range []string{"", "registry.example/agent:2"} {
		if image != "" {
			env.Kubectl(t, "set", "image", "-n", ns, "daemonset/agent", "app="+image)
		}
		r := check(t, "-n", ns, "ds/agent", "--until", "ready", "--timeout", "4m")
		wantVerdict(t, r, 0, "met")
		wantStderr(t, r, "Targets:  daemonset/agent: rolled out on 3/3 nodes in ")
		live := 0
		for _, p := range pods(t, ns, "app=agent") {
			if p.DeletionTimestamp == nil {
				live++
				if i == 1 && p.Spec.Containers[0].Image != image {
					t.Errorf("after the verdict pod %s runs %s", p.Name, p.Spec.Containers[0].Image)
				}
			}
		}
		if live != 3 {
			t.Errorf("after the verdict %d pods of the DaemonSet live, want one per node (3)", live)
		}
	}
}

// A Job target is met by Complete; one that fails after a retry fails the
// check with its reason, the retry said and not taken for a failure.
func TestTargetJob(t *testing.T) {
	t.Parallel()
	t.Run("succeeds", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		env.Apply(t, ns, jobYAML("report", nil))
		r := check(t, "-n", ns, "job/report", "--until", "ready", "--timeout", "4m")
		wantVerdict(t, r, 0, "met")
		wantStderr(t, r, "Targets:  job/report: complete: 1/1 succeeded in ")
	})
	t.Run("fails", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		env.Apply(t, ns, strings.Replace(jobYAML("broken", state(localcluster.StateError)), "backoffLimit: 0", "backoffLimit: 1", 1))
		r := check(t, "-n", ns, "jobs/broken", "--until", "healthy", "--timeout", "4m")
		wantVerdict(t, r, 4, "failed")
		wantStderr(t, r, "podsync: job/broken: 1 pod failed so far; the Job retries (backoffLimit 1), so the check goes on",
			"Reason:   job "+ns+"/broken failed (BackoffLimitExceeded): Job has reached the specified backoff limit",
			"Targets:  job/broken: failed: BackoffLimitExceeded", "Container app: terminated (Error), exit code 1")
		if n := harness.CountLines(r.Stderr, `^Pod `+ns+`/broken-\S+ is not satisfied:`); n < 1 {
			t.Errorf("no failed pod of the Job explained\n%s", r)
		}
	})
}

// manifest is what a pipeline applies: a Deployment, a Service, a Job and
// a ConfigMap in one multi-document YAML.
func manifest() string {
	return deploymentYAML("web", "registry.example/web:1", 2, nil) + "---\n" +
		"apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {selector: {app: web}, ports: [{port: 80}]}\n---\n" +
		jobYAML("migrate", nil) + "---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {level: debug}\n"
}

// A manifest piped in (`-f -`), started before it is applied: its objects
// do not exist yet and are waited for, the Service and ConfigMap by their
// status (met once they exist), and the JSON summary has a line per
// target.
func TestTargetManifestOnStdin(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	s := startPodsync(t, manifest(), "-n", ns, "-f", "-", "--until", "healthy", "--timeout", "4m", "-o", "json")
	time.Sleep(2 * time.Second)
	env.Apply(t, ns, manifest())
	r := s.wait(t)
	t.Logf("exit %d after %s", r.Code, r.Took.Round(time.Millisecond))
	wantVerdict(t, r, 0, "met")
	var sum struct {
		Targets []struct {
			Kind, Namespace, Name, Verdict, Reason string
			Pods                                   int
		} `json:"targets"`
	}
	lines := strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("no JSON summary: %v\n%s", err, r)
	}
	type target struct{ kind, name, verdict, reason string }
	var got []target
	for _, tg := range sum.Targets {
		if tg.Namespace != ns || tg.Pods < 1 && (tg.Kind == "Deployment" || tg.Kind == "Job") {
			t.Errorf("target %+v: want namespace %s and its pods counted", tg, ns)
		}
		got = append(got, target{tg.Kind, tg.Name, tg.Verdict, tg.Reason})
	}
	want := []target{{"Deployment", "web", "met", "rolled out 2/2"}, {"Service", "web", "met", "Service is ready"},
		{"Job", "migrate", "met", "complete: 1/1 succeeded"}, {"ConfigMap", "settings", "met", "Resource is always ready"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("JSON targets = %+v, want %+v", got, want)
	}
	wantLines(t, r.Stdout, `^\{"type":"ADD","object":\{"kind":"Pod".*"name":"web-`, 2)
	wantLines(t, r.Stdout, `^\{"type":"ADD","object":\{"kind":"Pod".*"name":"migrate-`, 1)
}

// TYPE/NAME targets that do not exist yet are waited for, and a pod target
// too; kubectl's short names and plural names work.
func TestTargetsAppearLater(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	s := startPodsync(t, "", "-n", ns, "deployments/late", "sts/later", "po/lone", "--until", "ready", "--timeout", "4m")
	time.Sleep(3 * time.Second)
	env.Apply(t, ns, deploymentYAML("late", "registry.example/late:1", 2, nil))
	env.Apply(t, ns, statefulSetYAML("later", "registry.example/later:1", 1, "RollingUpdate", 0))
	env.Apply(t, ns, harness.PodYAML("lone", nil))
	r := s.wait(t)
	wantVerdict(t, r, 0, "met")
	wantStderr(t, r, "Targets:  deployment/late: rolled out 2/2 in ", "          statefulset/later: rolled out 1/1 at revision later-",
		"          pod/lone: satisfies ready in ", "Pods:     4 matched (Running 4)")
	// On a busy machine the first pods can be there by the time podsync
	// lists: they are then in its initial list.
	wantLines(t, r.Stdout, `^(ADD|SYNC)\s+(late-|later-0|lone)`, 4)
}

// Targets in more namespaces than get an informer each: one informer over
// every namespace for a user who may list and watch pods there, one per
// namespace for a user who may only in these namespaces; -v=2 says which.
func TestTargetsAcrossNamespaces(t *testing.T) {
	t.Parallel()
	var docs []string
	var namespaces []string
	for i := range 4 {
		ns := env.Namespace(t)
		namespaces = append(namespaces, ns)
		name := fmt.Sprintf("w%d", i)
		env.Apply(t, ns, deploymentYAML(name, "registry.example/w:1", 1, nil))
		env.Apply(t, ns, `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: watch-workloads}
rules:
- apiGroups: ["", apps, batch]
  resources: [pods, events, deployments, statefulsets, daemonsets, jobs, replicasets]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: watch-workloads}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: watch-workloads}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: ci-namespaces}]
`)
		docs = append(docs, strings.Replace(deploymentYAML(name, "registry.example/w:1", 1, nil), "metadata:\n  name: "+name,
			"metadata:\n  name: "+name+"\n  namespace: "+ns, 1))
	}
	all := strings.Join(docs, "---\n")
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.Cluster.WriteUserKubeconfig(kubeconfig, "ci-namespaces"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		user, want string
		env        []string
	}{
		{"admin", "with one informer over every namespace: pods may be listed and watched in every namespace", nil},
		{"ci-namespaces", "with one informer per namespace: pods may not be listed in every namespace", []string{"KUBECONFIG=" + kubeconfig}},
	} {
		t.Run(c.user, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), runLimit)
			defer cancel()
			cmd := env.Command(ctx, c.env, "podsync", "-f", "-", "--until", "ready", "--timeout", "4m", "-v=2")
			cmd.Stdin = strings.NewReader(all)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			r := harness.Result{Code: harness.ExitCode(cmd.Run()), Stdout: stdout.String(), Stderr: stderr.String()}
			wantVerdict(t, r, 0, "met")
			wantStderr(t, r, fmt.Sprintf("podsync: watching the pods of 4 namespaces (%s) ", strings.Join(slices.Sorted(slices.Values(namespaces)), ", ")), c.want)
			for i, ns := range namespaces {
				wantStderr(t, r, fmt.Sprintf("deployment/w%d -n %s: rolled out 1/1 in ", i, ns))
				wantLines(t, r.Stdout, `^(SYNC|ADD|UPDATE)\s+`+ns+`\s+w`+fmt.Sprint(i)+`-\S+\s+1/1\s+Running\s`, 1)
			}
		})
	}
}

// kubectl's completion of `kubectl podsync` offers the TYPE/ prefixes and,
// after one, the names of that kind in the namespace.
func TestTargetCompletion(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, deploymentYAML("web", "registry.example/web:1", 1, nil))
	env.Apply(t, ns, deploymentYAML("worker", "registry.example/worker:1", 1, nil))
	env.Apply(t, ns, jobYAML("migrate", nil))
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"-n", ns, "state"}, []string{"statefulset/"}},
		{[]string{"-n", ns, "deploy/w"}, []string{"deploy/web", "deploy/worker"}},
		{[]string{"-n", ns, "deploy/web", "deployment/"}, []string{"deployment/web", "deployment/worker"}},
		{[]string{"-n", ns, "job/"}, []string{"job/migrate"}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := env.Command(ctx, nil, append([]string{"__complete", "podsync"}, c.args...)...).Output()
		cancel()
		if err != nil {
			t.Fatalf("kubectl __complete podsync %q: %v", c.args, err)
		}
		lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
		var got []string
		for _, l := range lines[:len(lines)-1] {
			got = append(got, strings.SplitN(l, "\t", 2)[0])
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("kubectl __complete podsync %q = %q, want %q", c.args, got, c.want)
		}
	}
}

// inState puts the pods of a workload's template into one of kwok's broken
// states.
func inState(yaml, name, st string) string {
	labels := "      labels: {app: " + name + "}\n"
	return strings.Replace(yaml, labels, labels+"      annotations: {"+localcluster.StateAnnotation+": "+st+"}\n", 1)
}

// A ReplicaSet of its own is met once its pods are available; a pod of any
// kind of target that crash-loops or cannot pull its image fails the check
// at once, naming the target: a Job too, which does not retry a pod that
// cannot start.
func TestTargetPodFailures(t *testing.T) {
	t.Parallel()
	t.Run("replicaset", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		env.Apply(t, ns, workloadYAML("ReplicaSet", "front", "registry.example/front:1", "replicas: 2"))
		r := check(t, "-n", ns, "rs/front", "--until", "ready", "--timeout", "4m")
		wantVerdict(t, r, 0, "met")
		wantStderr(t, r, "Targets:  replicaset/front: 2/2 pods available in ", "Pods:     2 matched (Running 2)")
	})
	for _, c := range []struct{ name, target, yaml, reason string }{
		{"statefulset", "sts/db", inState(statefulSetYAML("db", "registry.example/db:1", 1, "RollingUpdate", 0), "db", localcluster.StateCrashLoop), "CrashLoopBackOff"},
		{"daemonset", "ds/agent", inState(daemonSetYAML("agent", "registry.example/agent:1"), "agent", localcluster.StateImagePullBackOff), "ImagePull"},
		{"job", "job/migrate", inState(jobYAML("migrate", nil), "migrate", localcluster.StateImagePullBackOff), "ImagePull"},
		{"replicaset", "rs/front", inState(workloadYAML("ReplicaSet", "front", "registry.example/front:1", "replicas: 1"), "front", localcluster.StateCrashLoop), "CrashLoopBackOff"},
		{"pod", "pod/lone", harness.PodYAML("lone", state(localcluster.StateImagePullBackOff)), "ImagePull"},
	} {
		t.Run(c.name+" fails", func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			env.Apply(t, ns, c.yaml)
			r := check(t, "-n", ns, c.target, "--until", "healthy", "--timeout", "4m")
			wantVerdict(t, r, 4, "failed")
			wantTook(t, r, 2*time.Minute)
			kind, name, _ := strings.Cut(c.target, "/")
			full := map[string]string{"sts": "statefulset", "ds": "daemonset", "rs": "replicaset"}[kind]
			if full == "" {
				full = kind
			}
			wantStderr(t, r, "Targets:  "+full+"/"+name+": failed: pod "+ns+"/", c.reason)
		})
	}
}
