package podsync_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/output"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
)

// targetRun runs a check about targets: pods from the sim, workloads from
// a fake API, output as -o name.
type targetRun struct {
	sim            *sim
	api            *fake.Clientset
	stdout, stderr *lockedBuffer
	done           chan podsync.Outcome
}

func startTargets(t *testing.T, pods *sim, until string, targets []check.Target, objs ...runtime.Object) *targetRun {
	t.Helper()
	return startTargetsFor(t, 30*time.Second, pods, until, targets, objs...)
}

// startTargetsFor starts the run with the workloads objs already there.
func startTargetsFor(t *testing.T, timeout time.Duration, pods *sim, until string, targets []check.Target, objs ...runtime.Object) *targetRun {
	t.Helper()
	w, stdout := nameWriter(t)
	r := &targetRun{sim: pods, api: fake.NewClientset(objs...), stdout: stdout, stderr: &lockedBuffer{}, done: make(chan podsync.Outcome, 1)}
	spec := untilSpec(t, until)
	cfg := podsync.Config{Output: w, Stdout: r.stdout, ErrOut: r.stderr, Check: spec, Targets: targets,
		Timeout: timeout, Workers: 1, MaxRetries: 5}
	clients := &podsync.Clients{Kube: r.api, KubeWatch: r.api}
	go func() {
		r.done <- podsync.Run(context.Background(), cfg, podsync.Cluster{Clients: clients, Source: r.sim.source()})
	}()
	select {
	case <-r.sim.listed:
	case out := <-r.done:
		select {
		case <-r.sim.listed:
			r.done <- out // it listed, then ended: the test reads the outcome
		default:
			t.Fatalf("the run ended before it listed pods: %+v\n%s", out, r.stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no pod list within 20 s")
	}
	return r
}

func (r *targetRun) create(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	if _, err := r.api.AppsV1().Deployments(d.Namespace).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (r *targetRun) outcome(t *testing.T) podsync.Outcome {
	t.Helper()
	select {
	case out := <-r.done:
		return out
	case <-time.After(40 * time.Second):
		t.Fatalf("the run did not end\n--- stdout\n%s--- stderr\n%s", r.stdout, r.stderr)
	}
	return podsync.Outcome{}
}

// rolledOut is a Deployment of 1 replica whose pods are labelled app=name,
// rolled out.
func rolledOut(name string) *appsv1.Deployment {
	one := int32(1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, Generation: 1},
		Spec: appsv1.DeploymentSpec{Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1},
	}
}

// podOf is a pod of Deployment app's ReplicaSet app-5d8f.
func podOf(name, app string, st podState) *corev1.Pod {
	return podOfSet(name, app, "5d8f", st)
}

// podOfSet is a pod of Deployment app's ReplicaSet app-hash.
func podOfSet(name, app, hash string, st podState) *corev1.Pod {
	p := newSimPod("a", name, 1, st, "")
	p.Labels["app"] = app
	p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-" + hash, Controller: &yes}}
	return p
}

// The stream shows the pods of the targets only. The pods of a target
// not seen yet are known by their owner references, and the check is met
// once every target is rolled out.
func TestTargetsShowTheirPodsAndWaitForLateOnes(t *testing.T) {
	synctest.Test(t, testTargetsShowTheirPodsAndWaitForLateOnes)
}

func testTargetsShowTheirPodsAndWaitForLateOnes(t *testing.T) {
	simPods := newSim(false)
	simPods.put(podOf("web-1", "web", runningReady))
	simPods.put(podOf("other-1", "other", runningReady))
	web, late := check.Target{Kind: "Deployment", Namespace: "a", Name: "web"}, check.Target{Kind: "Deployment", Namespace: "a", Name: "late"}
	r := startTargets(t, simPods, "healthy", []check.Target{web, late}, rolledOut("web"))
	r.sim.put(podOf("late-1", "late", runningReady))
	waitFor(t, r.stdout, "pod/late-1 added")
	if out := r.stdout.String(); strings.Contains(out, "other-1") {
		t.Fatalf("a pod of no target is shown:\n%s", out)
	}
	waitWatching(t, r, "deployments")
	r.create(t, rolledOut("late"))
	out := r.outcome(t)
	if out.Verdict != podsync.Met {
		t.Fatalf("verdict %v, want met\n--- stdout\n%s--- stderr\n%s", out.Verdict, r.stdout, r.stderr)
	}
	if got, want := r.stdout.String(), "pod/web-1 synced\npod/late-1 added\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	for _, want := range []string{"Targets:  deployment/web: rolled out 1/1 in ", "          deployment/late: rolled out 1/1 in ", "Pods:     2 matched"} {
		if !strings.Contains(r.stderr.String(), want) {
			t.Errorf("stderr has no %q:\n%s", want, r.stderr)
		}
	}
}

// A Job that retries a failed pod goes on (and says so once); a Job that
// fails fails the check at once, with its reason, its failed pod explained.
func TestFailedJobTarget(t *testing.T) { synctest.Test(t, testFailedJobTarget) }

func testFailedJobTarget(t *testing.T) {
	pods, job := failedJobPod()
	r := startTargets(t, pods, "healthy", []check.Target{{Kind: "Job", Namespace: "a", Name: "migrate"}})
	waitWatching(t, r, "jobs")
	if _, err := r.api.BatchV1().Jobs("a").Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r.stderr, "podsync: job/migrate: 1 pod failed so far; the Job retries (backoffLimit 6), so the check goes on\n")
	job.Status.Conditions = backoffLimitExceeded()
	if _, err := r.api.BatchV1().Jobs("a").Update(context.Background(), job, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out := r.outcome(t)
	if out.Verdict != podsync.Failed {
		t.Fatalf("verdict %v, want failed\n%s", out.Verdict, r.stderr)
	}
	for _, want := range []string{
		"Reason:   job a/migrate failed (BackoffLimitExceeded): Job has reached the specified backoff limit\n",
		"Targets:  job/migrate: failed: BackoffLimitExceeded: Job has reached the specified backoff limit\n",
		"Pod a/migrate-1 is not satisfied:",
	} {
		if !strings.Contains(r.stderr.String(), want) {
			t.Errorf("stderr has no %q:\n%s", want, r.stderr)
		}
	}
	if n := strings.Count(r.stderr.String(), "pod failed so far"); n != 1 {
		t.Errorf("the retry note was said %d times, want once", n)
	}
}

// waitWatching waits until the run watches resource. The fake clientset's
// watch does not replay a change made between the informer's list and its
// watch, so a test that writes before then could lose the change under
// load. The fake records a watch under the lock that also registers it,
// so once the action shows, a change is seen.
func waitWatching(t *testing.T, r *targetRun, resource string) {
	t.Helper()
	settle(t, func() bool {
		return slices.ContainsFunc(r.api.Actions(), func(a k8stesting.Action) bool {
			return a.GetVerb() == "watch" && a.GetResource().Resource == resource
		})
	}, func() string { return fmt.Sprintf("no watch of %s within 20 s", resource) })
}

func waitFor(t *testing.T, b *lockedBuffer, text string) {
	t.Helper()
	settle(t, func() bool { return strings.Contains(b.String(), text) },
		func() string { return fmt.Sprintf("no %q within 20 s:\n%s", text, b) })
}

// settle returns once cond holds with every goroutine of the bubble
// waiting. The bubble's clock moves on only while cond does not hold, for
// what waits on it (a reflector's back-off, a retried request); it fails
// the test with why() if cond does not hold within 20 s of that clock.
func settle(t *testing.T, cond func() bool, why func() string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for synctest.Wait(); !cond(); synctest.Wait() {
		if time.Now().After(deadline) {
			t.Fatal(why())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A target deleted while the check waits is not met, and the summary says
// so when the check ends.
func TestDeletedTarget(t *testing.T) { synctest.Test(t, testDeletedTarget) }

func testDeletedTarget(t *testing.T) {
	pods := newSim(false)
	pods.put(podOf("web-1", "web", runningNotReady))
	web := check.Target{Kind: "Deployment", Namespace: "a", Name: "web"}
	r := startTargetsFor(t, 3*time.Second, pods, "ready", []check.Target{web}, rolledOut("web"))
	waitWatching(t, r, "deployments")
	if err := r.api.AppsV1().Deployments("a").Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	out := r.outcome(t)
	if out.Verdict != podsync.NotMet {
		t.Fatalf("verdict %v, want not met\n%s", out.Verdict, r.stderr)
	}
	if want := "Targets:  deployment/web: not met: was deleted\n"; !strings.Contains(r.stderr.String(), want) {
		t.Errorf("stderr has no %q:\n%s", want, r.stderr)
	}
}

// failedJobPod is a Job migrate retrying after its pod migrate-1 failed,
// and the sim holding that pod.
func failedJobPod() (*sim, *batchv1.Job) {
	pods := newSim(false)
	failed := podOf("migrate-1", "migrate", failedPhase)
	yes := true
	failed.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "migrate", Controller: &yes}}
	pods.put(failed)
	six := int32(6)
	return pods, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "migrate"},
		Spec: batchv1.JobSpec{BackoffLimit: &six,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "migrate"}}},
		Status: batchv1.JobStatus{Failed: 1, Active: 1},
	}
}

func backoffLimitExceeded() []batchv1.JobCondition {
	return []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue,
		Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}}
}

// A Job that had failed before the check started fails it, and the
// summary still lists and explains its pods: the verdict waits for the
// pods' initial list.
func TestJobFailedBeforeTheStart(t *testing.T) {
	pods, job := failedJobPod()
	job.Status.Conditions = backoffLimitExceeded()
	r := startTargets(t, pods, "healthy", []check.Target{{Kind: "Job", Namespace: "a", Name: "migrate"}}, job)
	if out := r.outcome(t); out.Verdict != podsync.Failed {
		t.Fatalf("verdict %v, want failed\n%s", out.Verdict, r.stderr)
	}
	for _, want := range []string{"Pods:     1 matched (Error 1)", "Pod a/migrate-1 is not satisfied:"} {
		if !strings.Contains(r.stderr.String(), want) {
			t.Errorf("stderr has no %q:\n%s", want, r.stderr)
		}
	}
	if got := r.stdout.String(); got != "pod/migrate-1 synced\n" {
		t.Errorf("stdout %q", got)
	}
}

// --once judges the targets as they are when the run starts: a rolled-out
// Deployment with ready pods meets it, a target that does not exist does
// not.
func TestTargetsOnce(t *testing.T) {
	for _, c := range []struct {
		name    string
		targets []check.Target
		want    podsync.Verdict
	}{
		{"rolled out", []check.Target{{Kind: "Deployment", Namespace: "a", Name: "web"}}, podsync.Met},
		{"missing", []check.Target{{Kind: "Deployment", Namespace: "a", Name: "web"}, {Kind: "StatefulSet", Namespace: "a", Name: "db"}}, podsync.NotMet},
	} {
		t.Run(c.name, func(t *testing.T) {
			pods := newSim(false)
			pods.put(podOf("web-1", "web", runningReady))
			r := runOnce(t, pods, c.targets, rolledOut("web"))
			if r.out.Verdict != c.want {
				t.Errorf("verdict %v, want %v\n%s", r.out.Verdict, c.want, r.stderr)
			}
		})
	}
}

// A user who may not list a target's kind cannot have it judged: exit 1,
// naming the request, as kubectl rollout status would.
func TestTargetKindForbidden(t *testing.T) {
	api := fake.NewClientset()
	api.PrependReactor("list", "statefulsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "", errors.New(`User "ci" cannot list resource "statefulsets"`))
	})
	r := runOnceWith(t, newSim(false), api, []check.Target{{Kind: "StatefulSet", Namespace: "a", Name: "db"}})
	if r.out.Verdict != podsync.Broken || r.out.ExitCode() != podsync.ExitCluster ||
		!strings.HasPrefix(r.out.Err.Error(), "list statefulsets: statefulsets.apps is forbidden") {
		t.Errorf("outcome %+v (%v), want exit 1 naming the list of statefulsets", r.out, r.out.Err)
	}
}

type onceResult struct {
	out    podsync.Outcome
	stderr *lockedBuffer
}

func runOnce(t *testing.T, pods *sim, targets []check.Target, objs ...runtime.Object) onceResult {
	t.Helper()
	return runOnceWith(t, pods, fake.NewClientset(objs...), targets)
}

func runOnceWith(t *testing.T, pods *sim, api *fake.Clientset, targets []check.Target) onceResult {
	t.Helper()
	w, stdout := nameWriter(t)
	stderr := &lockedBuffer{}
	cfg := podsync.Config{Output: w, Stdout: stdout, ErrOut: stderr, Check: untilSpec(t, "ready"), Targets: targets, Once: true,
		Timeout: 20 * time.Second, Workers: 1, MaxRetries: 5}
	out := podsync.Run(context.Background(), cfg, podsync.Cluster{Clients: &podsync.Clients{Kube: api, KubeWatch: api}, Source: pods.source()})
	return onceResult{out: out, stderr: stderr}
}

// A pod failure found in the first page of the list fails the check at
// once, before the informer holds the list; the summary still names the
// target it belongs to.
func TestPodFailureNamesItsTarget(t *testing.T) {
	pods := newSim(false)
	pods.put(podOf("web-1", "web", crashLooping))
	pods.put(podOf("web-2", "web", runningReady))
	web := check.Target{Kind: "Deployment", Namespace: "a", Name: "web"}
	r := startTargets(t, pods, "ready", []check.Target{web}, rolledOut("web"))
	if out := r.outcome(t); out.Verdict != podsync.Failed {
		t.Fatalf("verdict %v, want failed\n%s", out.Verdict, r.stderr)
	}
	want := `Targets:  deployment/web: failed: pod a/web-1: container "app" is CrashLoopBackOff: back-off`
	if !strings.Contains(r.stderr.String(), want) {
		t.Errorf("stderr has no %q:\n%s", want, r.stderr)
	}
}

// nameWriter prints -o name into a buffer of the test's.
func nameWriter(t *testing.T) (*output.Writer, *lockedBuffer) {
	t.Helper()
	pf := get.NewGetPrintFlags()
	name := "name"
	pf.OutputFormat = &name
	out := &lockedBuffer{}
	w, err := output.New(output.Options{PrintFlags: pf, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	return w, out
}

// untilSpec is the check of --until until with every other flag unset.
func untilSpec(t *testing.T, until string) check.Spec {
	t.Helper()
	spec, err := check.Flags{Until: until, UntilSet: true, MinPods: check.Unset, MaxRestarts: check.Unset}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// A check over pods watches their namespace's Deployments and ReplicaSets
// to confirm rollouts; a plain stream, which confirms nothing, asks nothing
// of them. Each run lasts until its --timeout.
func TestOnlyAConfirmingRunWatchesRollouts(t *testing.T) {
	plain, err := check.Flags{MinPods: check.Unset, MaxRestarts: check.Unset}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		spec     check.Spec
		watching bool
	}{{"until ready", untilSpec(t, "ready"), true}, {"plain", plain, false}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pods := newSim(false)
				pods.put(newSimPod("a", "web-1", 1, runningNotReady, ""))
				api := fake.NewClientset()
				w, stdout := nameWriter(t)
				cfg := podsync.Config{Output: w, Stdout: stdout, ErrOut: &lockedBuffer{}, Check: c.spec,
					Timeout: 5 * time.Second, Workers: 1, MaxRetries: 5}
				podsync.Run(context.Background(), cfg, podsync.Cluster{Clients: &podsync.Clients{Kube: api, KubeWatch: api}, Source: pods.source()})
				asked := map[string]bool{}
				for _, a := range api.Actions() {
					asked[a.GetVerb()+" "+a.GetResource().Resource] = true
				}
				if got := asked["watch deployments"] && asked["watch replicasets"]; got != c.watching {
					t.Errorf("watched Deployments and ReplicaSets: %v, want %v (requests %v)", got, c.watching, asked)
				}
			})
		})
	}
}
