package podsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-podsync/kubectl-podsync/internal/retry"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

func template(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
	}
}

func deployment(image string, generation, observed int64, paused bool) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "dep-uid", Generation: generation},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: template(image),
			Paused:   paused,
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: observed},
	}
}

// replicaSet is a ReplicaSet of image with template hash hash, controlled
// by the Deployment web unless owner says otherwise, created age ago.
func replicaSet(hash, image string, owner types.UID, age time.Duration) *appsv1.ReplicaSet {
	yes := true
	tpl := template(image)
	tpl.Labels = map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "shop", Name: "web-" + hash, Labels: tpl.Labels,
			CreationTimestamp: metav1.NewTime(time.Now().Add(-age)),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: owner, Controller: &yes,
			}},
		},
		Spec: appsv1.ReplicaSetSpec{Template: tpl},
	}
}

func TestCurrentRevision(t *testing.T) {
	tests := []struct {
		name string
		dep  *appsv1.Deployment
		want check.CurrentRevision
	}{
		{"rolled to the new template", deployment("web:2", 2, 2, false),
			check.CurrentRevision{ReplicaSet: "web-new", Hash: "new"}},
		{"back to the old template", deployment("web:1", 3, 3, false),
			check.CurrentRevision{ReplicaSet: "web-old", Hash: "old"}},
		{"controller behind", deployment("web:2", 3, 2, false),
			check.CurrentRevision{ReplicaSet: "web-new", Hash: "new", Waiting: "the Deployment controller has not acted on generation 3 yet"}},
		{"paused before the new ReplicaSet", deployment("web:3", 4, 4, true),
			check.CurrentRevision{Waiting: "no ReplicaSet has its current pod template yet: the Deployment is paused"}},
		{"no ReplicaSet yet", deployment("web:3", 4, 4, false),
			check.CurrentRevision{Waiting: "no ReplicaSet has its current pod template yet"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(tt.dep,
				replicaSet("old", "web:1", "dep-uid", time.Hour),
				replicaSet("new", "web:2", "dep-uid", time.Minute),
				// Same template, older, but another owner's: never current.
				replicaSet("stray", "web:2", "other-uid", 2*time.Hour))
			got, err := currentRevision(context.Background(), client.AppsV1(), "shop/web")
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("currentRevision = %+v, want %+v", got, tt.want)
			}
		})
	}
	_, err := currentRevision(context.Background(), fake.NewClientset().AppsV1(), "shop/web")
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "get deployment shop/web") {
		t.Errorf("missing Deployment: err = %v, want NotFound with context", err)
	}
}

// evaluatorHeldBy returns an evaluator for --until ready whose one ready pod
// of Deployment shop/web waits on the rollout's confirmation.
func evaluatorHeldBy(t *testing.T) *check.Evaluator {
	t.Helper()
	spec, err := check.Flags{Until: "ready", UntilSet: true, MinPods: check.Unset, MaxRestarts: check.Unset}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	e := check.NewEvaluator(spec)
	e.ConfirmRollouts()
	rs := replicaSet("new", "web:2", "dep-uid", 0)
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-new-a", UID: "p1", Labels: rs.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-new", Controller: &yes}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	e.Observe("shop/web-new-a", pod, true)
	if v := e.Verdict(); !v.WaitsOnRollout() {
		t.Fatalf("verdict %+v does not wait on the rollout", v)
	}
	return e
}

func TestRolloutsApply(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", errors.New("no RBAC"))
	t.Run("confirmed", func(t *testing.T) {
		var warn bytes.Buffer
		e, r := evaluatorHeldBy(t), newRollouts(nil, 3, &warn, 0, nil)
		r.inFlight["shop/web"], r.delays["shop/web"] = true, retry.Backoff().DelayFunc()
		r.apply(e, rolloutResult{key: "shop/web", cur: check.CurrentRevision{ReplicaSet: "web-new", Hash: "new"}})
		if v := e.Verdict(); v.State != check.Met || r.inFlight["shop/web"] || r.delays["shop/web"] != nil || warn.Len() != 0 {
			t.Errorf("after confirmation: %v, in flight %v, delays %v, warning %q", v.State, r.inFlight, r.delays, warn.String())
		}
	})
	t.Run("still held back: looked up again, but not with --once", func(t *testing.T) {
		for _, once := range []bool{false, true} {
			e, r := evaluatorHeldBy(t), newRollouts(nil, 3, &bytes.Buffer{}, 0, nil)
			r.once = once
			r.inFlight["shop/web"] = true
			r.apply(e, rolloutResult{key: "shop/web", cur: check.CurrentRevision{Waiting: "no ReplicaSet has its current pod template yet"}})
			got := r.takeAgain()
			if once && len(got) != 0 || !once && !reflect.DeepEqual(got, []string{"shop/web"}) || r.busy() {
				t.Errorf("once %v: again %q, busy %v", once, got, r.busy())
			}
			if again := r.takeAgain(); len(again) != 0 {
				t.Errorf("once %v: taken twice: %q", once, again)
			}
		}
	})
	t.Run("forbidden is final", func(t *testing.T) {
		var warn bytes.Buffer
		e, r := evaluatorHeldBy(t), newRollouts(nil, 3, &warn, 0, nil)
		r.apply(e, rolloutResult{key: "shop/web", err: forbidden})
		if v := e.Verdict(); v.State != check.Met {
			t.Errorf("a Deployment the user may not read holds the check: %s", e.Reason(v))
		}
		if !strings.HasPrefix(warn.String(), "warning: cannot confirm the rollout of Deployment shop/web, judging its pods alone: ") ||
			strings.Count(warn.String(), "\n") != 1 {
			t.Errorf("warning = %q", warn.String())
		}
	})
	t.Run("the warning names its context", func(t *testing.T) {
		var warn bytes.Buffer
		e, r := evaluatorHeldBy(t), newRollouts(nil, 3, &warn, 0, nil)
		r.prefix = "context prod-eu: "
		r.apply(e, rolloutResult{key: "shop/web", err: forbidden})
		if !strings.HasPrefix(warn.String(), "warning: context prod-eu: cannot confirm the rollout of Deployment shop/web") {
			t.Errorf("warning = %q", warn.String())
		}
	})
	t.Run("other errors are retried up to --max-retries", func(t *testing.T) {
		var warn bytes.Buffer
		e, r := evaluatorHeldBy(t), newRollouts(nil, 3, &warn, 0, nil)
		for i := 1; i <= 3; i++ {
			r.apply(e, rolloutResult{key: "shop/web", err: errors.New("connection reset")})
			held := e.Verdict().WaitsOnRollout()
			if i < 3 && (!held || warn.Len() != 0 || e.HasCurrent("shop/web")) {
				t.Fatalf("attempt %d: gave up too soon (held %v, warning %q)", i, held, warn.String())
			}
			if again := r.takeAgain(); i < 3 && !reflect.DeepEqual(again, []string{"shop/web"}) || i == 3 && len(again) != 0 {
				t.Errorf("attempt %d: looked up again: %q", i, again)
			}
		}
		if v := e.Verdict(); v.State != check.Met || !strings.Contains(warn.String(), "connection reset") {
			t.Errorf("after 3 failed attempts: %v, warning %q", v.State, warn.String())
		}
	})
}

// ask starts one lookup per Deployment, however often the check is judged,
// and its answer reaches the stream.
func TestRolloutsAskOncePerDeployment(t *testing.T) {
	synctest.Test(t, testRolloutsAskOncePerDeployment)
}

func testRolloutsAskOncePerDeployment(t *testing.T) {
	client := fake.NewClientset(deployment("web:2", 2, 2, false), replicaSet("new", "web:2", "dep-uid", 0))
	results := make(chan rolloutResult)
	r := newRollouts(client.AppsV1(), 3, &bytes.Buffer{}, 0, results)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.ask(ctx, []string{"shop/web"})
	r.ask(ctx, []string{"shop/web"})
	select {
	case res := <-results:
		if res.err != nil || res.cur.Hash != "new" {
			t.Errorf("result = %+v", res)
		}
	case <-time.After(time.Minute):
		t.Fatal("no result")
	}
	// A second lookup waits out a back-off of up to 2 s first: the
	// bubble's clock runs well past it, and only once every goroutine waits.
	select {
	case res := <-results:
		t.Errorf("a second lookup ran: %+v", res)
	case <-time.After(time.Minute):
	}
	cancel()
	r.wg.Wait()
	if n := len(client.Actions()); n != 2 {
		t.Errorf("%d API calls, want 2 (get deployment, list replicasets)", n)
	}
}

// Deployments looked up together answer as each looked up alone does.
func TestCurrentRevisionsAnswerAsOneByOne(t *testing.T) {
	client := rolloutClient()
	keys := []string{"shop/web", "shop/paused", "shop/behind", "shop/gone"}
	together, err := currentRevisions(context.Background(), client.AppsV1(), "shop", keys)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		cur, err := currentRevision(context.Background(), client.AppsV1(), k)
		if got := together[k]; !reflect.DeepEqual(got.cur, cur) || fmt.Sprint(got.err) != fmt.Sprint(err) {
			t.Errorf("%s: together %+v, %v; alone %+v, %v", k, got.cur, got.err, cur, err)
		}
	}
	if together["shop/web"].cur.Hash != "new" || !apierrors.IsNotFound(together["shop/gone"].err) {
		t.Errorf("web %+v, gone %v", together["shop/web"].cur, together["shop/gone"].err)
	}
}

// Several Deployments of one namespace asked about at once cost two
// lists; one that cannot be listed is looked up alone.
func TestRolloutsAskANamespaceTogether(t *testing.T) {
	for _, listable := range []bool{true, false} {
		client := fake.NewClientset(deployment("web:2", 2, 2, false), replicaSet("new", "web:2", "dep-uid", 0))
		if !listable {
			client.PrependReactor("list", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "", errors.New("no RBAC"))
			})
		}
		results := make(chan rolloutResult, 2)
		r := newRollouts(client.AppsV1(), 3, &bytes.Buffer{}, 0, results)
		r.ask(context.Background(), []string{"shop/web", "shop/gone"})
		r.wait()
		close(results)
		got := map[string]rolloutResult{}
		for res := range results {
			got[res.key] = res
		}
		if got["shop/web"].cur.Hash != "new" || got["shop/web"].err != nil || !apierrors.IsNotFound(got["shop/gone"].err) {
			t.Errorf("listable %v: results %+v", listable, got)
		}
		var verbs []string
		for _, a := range client.Actions() {
			verbs = append(verbs, a.GetVerb()+" "+a.GetResource().Resource)
		}
		want := []string{"list deployments", "list replicasets"}
		if !listable {
			want = []string{"list deployments", "get deployments", "list replicasets", "get deployments"}
		}
		if !reflect.DeepEqual(verbs, want) {
			t.Errorf("listable %v: requests %q, want %q", listable, verbs, want)
		}
	}
}

// rolloutClient holds Deployments of each kind in namespace shop:
// rolled, paused, behind its generation; and a stray ReplicaSet.
func rolloutClient() *fake.Clientset {
	named := func(d *appsv1.Deployment, name string, uid types.UID) *appsv1.Deployment {
		d.Name, d.UID = name, uid
		return d
	}
	behind := replicaSet("b1", "web:2", "behind-uid", 0)
	behind.Name, behind.OwnerReferences[0].Name = "behind-b1", "behind"
	return fake.NewClientset(
		deployment("web:2", 2, 2, false), replicaSet("old", "web:1", "dep-uid", time.Hour), replicaSet("new", "web:2", "dep-uid", 0),
		replicaSet("stray", "web:2", "other-uid", 2*time.Hour),
		named(deployment("web:3", 3, 3, true), "paused", "paused-uid"),
		named(deployment("web:2", 4, 3, false), "behind", "behind-uid"), behind,
	)
}

// The watched Deployments and ReplicaSets answer as a lookup does.
func TestRolloutCacheAnswersAsALookup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := rolloutClient()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c, err := watchRollouts(ctx, client, "", func() {})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if !c.ready() {
			t.Fatal("the cache is not ready once both lists are in")
		}
		for _, k := range []string{"shop/web", "shop/paused", "shop/behind", "shop/gone"} {
			cur, err := currentRevision(ctx, client.AppsV1(), k)
			if got := c.answer(k); !reflect.DeepEqual(got.cur, cur) || fmt.Sprint(got.err) != fmt.Sprint(err) {
				t.Errorf("%s: cache %+v, %v; lookup %+v, %v", k, got.cur, got.err, cur, err)
			}
		}
		if got := c.answer("shop/web"); got.cur.Hash != "new" {
			t.Errorf("web: %+v", got.cur)
		}
	})
}

// With the cache ready, a Deployment that holds the check back is
// answered at once, with no request, and again only after the watched
// objects changed.
func TestRolloutsAnswerFromTheCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset(deployment("web:2", 3, 2, false), replicaSet("new", "web:2", "dep-uid", 0))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		results := make(chan rolloutResult, 1)
		r := newRollouts(client.AppsV1(), 3, &bytes.Buffer{}, 0, results)
		var err error
		if r.cache, err = watchRollouts(ctx, client, "", func() { r.changed(ctx) }); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		drain(results, r)
		client.ClearActions()
		e := evaluatorHeldBy(t)
		answers := r.ask(ctx, e.TakeUnconfirmed())
		if len(answers) != 1 || answers[0].cur.Waiting == "" {
			t.Fatalf("answers %+v, want one for shop/web, waiting on its controller", answers)
		}
		r.apply(e, answers[0])
		if got := r.ask(ctx, e.TakeUnconfirmed()); len(got) != 0 {
			t.Errorf("answered again with nothing changed: %+v", got)
		}
		d := deployment("web:2", 3, 3, false)
		if _, err := client.AppsV1().Deployments("shop").UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		drain(results, r)
		answers = r.ask(ctx, e.TakeUnconfirmed())
		if len(answers) != 1 || answers[0].cur.Waiting != "" || answers[0].cur.Hash != "new" {
			t.Fatalf("after the controller caught up: answers %+v", answers)
		}
		r.apply(e, answers[0])
		if v := e.Verdict(); v.State != check.Met {
			t.Errorf("verdict %+v, want met", v)
		}
		for _, a := range client.Actions() {
			if a.GetVerb() == "get" || a.GetVerb() == "list" {
				t.Errorf("a request while the cache answers: %s %s", a.GetVerb(), a.GetResource().Resource)
			}
		}
	})
}

// drain applies the wake-ups waiting in results.
func drain(results chan rolloutResult, r *rollouts) {
	for {
		select {
		case res := <-results:
			r.apply(nil, res)
		default:
			return
		}
	}
}
