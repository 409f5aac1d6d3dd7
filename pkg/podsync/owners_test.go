package podsync_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
)

// A pod that matches a Deployment's selector but that the Deployment does
// not control (a debug pod, a Job's pod) is not shown and never judged,
// even when it fails; it is named once on stderr.
func TestForeignPodIsNamedNotJudged(t *testing.T) {
	pods := newSim(false)
	pods.put(podOf("web-1", "web", runningReady))
	debug := newSimPod("a", "debug", 1, crashLooping, "")
	debug.Labels["app"] = "web"
	pods.put(debug)
	web := check.Target{Kind: "Deployment", Namespace: "a", Name: "web"}
	r := startTargets(t, pods, "ready", []check.Target{web}, rolledOut("web"))
	out := r.outcome(t)
	if out.Verdict != podsync.Met {
		t.Fatalf("verdict %v, want met\n%s", out.Verdict, r.stderr)
	}
	if got, want := r.stdout.String(), "pod/web-1 synced\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	note := "podsync: pod debug matches the selector of deployment/web but is not controlled by it: not judged\n"
	if n := strings.Count(r.stderr.String(), note); n != 1 {
		t.Errorf("the note on the foreign pod is said %d times, want once:\n%s", n, r.stderr)
	}
}

// midRollout is Deployment web rolling out image v2 over ReplicaSet
// web-old (v1); current says which template the Deployment has now.
func midRollout(current string) (*appsv1.Deployment, *appsv1.ReplicaSet, *appsv1.ReplicaSet) {
	d := rolledOut("web")
	d.UID = "uid-web"
	d.Spec.Template = template(current)
	d.Status.Replicas = 2 // one old replica left
	rs := func(name, image string) *appsv1.ReplicaSet {
		yes := true
		return &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web-" + name, UID: types.UID("uid-web-" + name),
				Labels:          map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: name},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: d.UID, Controller: &yes}}},
			Spec: appsv1.ReplicaSetSpec{Template: template(image)},
		}
	}
	return d, rs("old", "v1"), rs("new", "v2")
}

func template(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
	}
}

// podOfReplicaSet is a pod of the ReplicaSet rs.
func podOfReplicaSet(name string, rs *appsv1.ReplicaSet, st podState) *corev1.Pod {
	p := podOfSet(name, "web", rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey], st)
	p.OwnerReferences[0].UID = rs.UID
	return p
}

// A fix rolled out over crash-looping pods (fix-forward) does not fail on
// the crash-looping pods of the ReplicaSet it replaces: the check is met
// once the rollout is; the same pods fail it at once while their
// ReplicaSet is the Deployment's current one.
func TestFixForwardSparesReplacedPods(t *testing.T) {
	for _, c := range []struct {
		current string
		want    podsync.Verdict
	}{{"v2", podsync.Met}, {"v1", podsync.Failed}} {
		t.Run("template "+c.current, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d, old, fixed := midRollout(c.current)
				pods := newSim(false)
				pods.put(podOfReplicaSet("web-old-1", old, crashLooping))
				pods.put(podOfReplicaSet("web-new-1", fixed, runningReady))
				web := check.Target{Kind: "Deployment", Namespace: "a", Name: "web"}
				r := startTargetsFor(t, 20*time.Second, pods, "ready", []check.Target{web}, d, old, fixed)
				if c.want == podsync.Met {
					waitFor(t, r.stdout, "pod/web-new-1 synced")
					waitWatching(t, r, "deployments")
					pods.remove("a/web-old-1")
					d = d.DeepCopy()
					d.Status.Replicas = 1
					if _, err := r.api.AppsV1().Deployments("a").UpdateStatus(context.Background(), d, metav1.UpdateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				if out := r.outcome(t); out.Verdict != c.want {
					t.Fatalf("verdict %v, want %v\n--- stdout\n%s--- stderr\n%s", out.Verdict, c.want, r.stdout, r.stderr)
				}
			})
		})
	}
}

// statefulSet is StatefulSet db of one replica at update revision rev;
// observed says whether its controller has acted on its spec.
func statefulSet(rev string, observed bool) *appsv1.StatefulSet {
	one := int32(1)
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "db", Generation: 2},
		Spec:       appsv1.StatefulSetSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
		Status:     appsv1.StatefulSetStatus{ObservedGeneration: 1, CurrentRevision: "db-1", UpdateRevision: rev},
	}
	if observed {
		s.Status.ObservedGeneration = 2
	}
	return s
}

// A StatefulSet whose new spec is not observed yet may be replacing every
// pod: a crash-looping pod does not fail the check then (the check times
// out), and does at once when the controller says that its revision is
// the one rolled out, also when it says so after the pod was judged.
func TestStatefulSetPodJudgedOnceItsRevisionIsKnown(t *testing.T) {
	for _, c := range []struct {
		name            string
		observed, later bool
		want            podsync.Verdict
	}{
		{"not observed", false, false, podsync.NotMet},
		{"observed", true, false, podsync.Failed},
		{"observed during the run", false, true, podsync.Failed},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pods := newSim(false)
				p := newSimPod("a", "db-0", 1, crashLooping, "")
				yes := true
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", Controller: &yes}}
				p.Labels[appsv1.ControllerRevisionHashLabelKey] = "db-1"
				pods.put(p)
				db := check.Target{Kind: "StatefulSet", Namespace: "a", Name: "db"}
				r := startTargetsFor(t, 2*time.Second, pods, "ready", []check.Target{db}, statefulSet("db-1", c.observed))
				if c.later {
					waitFor(t, r.stdout, "pod/db-0 synced")
					waitWatching(t, r, "statefulsets")
					if _, err := r.api.AppsV1().StatefulSets("a").UpdateStatus(context.Background(), statefulSet("db-1", true), metav1.UpdateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				out := r.outcome(t)
				if out.Verdict != c.want {
					t.Fatalf("verdict %v, want %v\n%s", out.Verdict, c.want, r.stderr)
				}
			})
		})
	}
}

// --until gone on a Deployment that no longer exists waits for the pods
// whose owner references lead to it.
func TestGoneWaitsForThePodsOfADeletedTarget(t *testing.T) {
	synctest.Test(t, testGoneWaitsForThePodsOfADeletedTarget)
}

func testGoneWaitsForThePodsOfADeletedTarget(t *testing.T) {
	pods := newSim(false)
	pods.put(podOf("web-1", "web", runningReady))
	pods.put(podOf("other-1", "other", runningReady))
	web := check.Target{Kind: "Deployment", Namespace: "a", Name: "web"}
	r := startTargetsFor(t, 20*time.Second, pods, "gone", []check.Target{web})
	waitFor(t, r.stdout, "pod/web-1 synced")
	select {
	case out := <-r.done:
		t.Fatalf("met while a pod of the target is there: %v\n%s", out.Verdict, r.stderr)
	default:
	}
	pods.remove("a/web-1")
	if out := r.outcome(t); out.Verdict != podsync.Met {
		t.Fatalf("verdict %v, want met\n%s", out.Verdict, r.stderr)
	}
	if got, want := r.stdout.String(), "pod/web-1 synced\npod/web-1 gone\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
}
