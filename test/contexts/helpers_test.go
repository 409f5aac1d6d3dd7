package contexts

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// all is podsync's pattern for the three contexts.
const all = "podsync-*"

var nsCounter struct {
	sync.Mutex
	n int
}

// cluster is one of the three clusters, by its context.
type cluster struct {
	context string
	cs      kubernetes.Interface
}

// clusters are admin clients of the three clusters, in context order.
func clusters(t testing.TB) []cluster {
	t.Helper()
	var out []cluster
	for i, c := range env.Clusters {
		cfg, err := c.RESTConfig()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, cluster{context: env.Contexts[i], cs: client(t, cfg)})
	}
	return out
}

func client(t testing.TB, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 200, 400
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// namespace creates a namespace of the same name in every cluster and
// deletes them after the test.
func namespace(t *testing.T) string {
	t.Helper()
	nsCounter.Lock()
	nsCounter.n++
	name := fmt.Sprintf("ctx-%d-%s", nsCounter.n, regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(t.Name()), "-"))
	nsCounter.Unlock()
	name = strings.TrimRight(name[:min(len(name), 60)], "-")
	for _, c := range clusters(t) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := c.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		cancel()
		if err != nil {
			t.Fatalf("create namespace %s in %s: %v", name, c.context, err)
		}
		t.Cleanup(func() {
			_ = c.cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	// Pods are refused until the namespace has its default service
	// account. The controller manager makes it, but after a test has
	// restarted an API server its watches may take long to come back, so
	// the test makes it when it is not there yet.
	for _, c := range clusters(t) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := c.cs.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
		cancel()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create the default service account of %s in %s: %v", name, c.context, err)
		}
	}
	return name
}

// pod is a one-container pod labelled app=app, with the kwok state
// annotations given.
func pod(name string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}, Annotations: annotations},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
}

func createPod(t testing.TB, cs kubernetes.Interface, ns string, p *corev1.Pod) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s/%s: %v", ns, p.Name, err)
	}
}

// readyPodEverywhere creates a ready pod name in ns of every cluster.
func readyPodEverywhere(t *testing.T, ns, name string) []cluster {
	t.Helper()
	cs := clusters(t)
	for _, c := range cs {
		createPod(t, c.cs, ns, pod(name, nil))
	}
	for _, c := range cs {
		harness.WaitReady(t, c.cs, ns, name)
	}
	return cs
}

// deployment is a Deployment of replicas pods labelled app=name.
func deployment(name, image string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{{Name: "app", Image: image}},
					TerminationGracePeriodSeconds: new(int64),
				},
			},
		},
	}
}

// wantLines fails unless exactly n lines of text match re.
func wantLines(t *testing.T, text, re string, n int) {
	t.Helper()
	if got := harness.CountLines(text, re); got != n {
		t.Errorf("%d lines match %q, want %d:\n%s", got, re, n, text)
	}
}

// wantStderr fails unless stderr holds every part.
func wantStderr(t *testing.T, r harness.Result, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(r.Stderr, p) {
			t.Errorf("stderr lacks %q\n%s", p, r)
		}
	}
}

func wantExit(t *testing.T, r harness.Result, code int) {
	t.Helper()
	if r.Code != code {
		t.Fatalf("exit %d, want %d\n%s", r.Code, code, r)
	}
}

// outage is an API server a test killed.
type outage struct {
	t         *testing.T
	cluster   *localcluster.Cluster
	context   string
	restarted bool
}

// killAPIServer SIGKILLs the API server of env.Clusters[i]. The test's
// cleanup restarts it, unless the test did (outage.restart), and waits
// until the cluster works again, so that the next test does not race the
// cluster's own recovery.
func killAPIServer(t *testing.T, i int) *outage {
	t.Helper()
	o := &outage{t: t, cluster: env.Clusters[i], context: env.Contexts[i]}
	if err := o.cluster.Kill(localcluster.APIServer); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !o.restarted {
			if err := o.cluster.Restart(localcluster.APIServer); err != nil {
				t.Errorf("restart %s's API server: %v", o.context, err)
				return
			}
		}
		o.waitWorking()
	})
	return o
}

// restart starts the API server again and waits until it is healthy.
func (o *outage) restart() {
	o.t.Helper()
	if err := o.cluster.Restart(localcluster.APIServer); err != nil {
		o.t.Fatalf("restart %s's API server: %v", o.context, err)
	}
	o.restarted = true
}

// waitWorking waits until the restarted cluster schedules and runs pods
// again (localcluster's WaitWorking). The controller manager, scheduler and
// kwok re-connect by themselves; should one still be in its back-off
// after two minutes, the three are restarted and the wait begins anew.
func (o *outage) waitWorking() {
	o.t.Helper()
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	err := o.cluster.WaitWorking(ctx)
	cancel()
	if err == nil {
		o.t.Logf("%s works again %s after its API server was restarted", o.context, time.Since(began).Round(time.Millisecond))
		return
	}
	o.t.Logf("%s does not work 2m after its API server was restarted (%v); restarting its controller manager, scheduler and kwok", o.context, err)
	for _, name := range []string{localcluster.ControllerManager, localcluster.Scheduler, localcluster.Kwok} {
		if err := o.cluster.Restart(name); err != nil {
			o.t.Errorf("restart %s of %s: %v", name, o.context, err)
			return
		}
	}
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := o.cluster.WaitWorking(ctx); err != nil {
		o.t.Errorf("%s does not work after its restarts: %v", o.context, err)
	}
}
