package checks

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// A pod's Ready=True written for generation 1 does not count once a spec
// update (here activeDeadlineSeconds) has made the pod generation 2: like
// kubectl wait --for=condition=Ready, the check waits until the kubelet
// writes the conditions of generation 2.
func TestPodConditionOfAnOlderGeneration(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	cs := env.Clientset(t)
	env.Apply(t, ns, harness.PodYAML("resized", state(localcluster.StateNeverReady)))
	waitPods(t, ns, "app=resized", 1, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	harness.SetReadyOf(t, cs, ns, "resized", 1)
	env.Kubectl(t, "-n", ns, "patch", "pod/resized", "--type=merge", "-p", `{"spec":{"activeDeadlineSeconds":3600}}`)
	p := getPod(t, ns, "resized")
	ready := readyCondition(p)
	if p.Generation != 2 || ready == nil || ready.Status != corev1.ConditionTrue || ready.ObservedGeneration != 1 {
		t.Fatalf("after the patch: generation %d, Ready %+v; want generation 2 and Ready=True of generation 1", p.Generation, ready)
	}

	for _, until := range []string{"ready", "condition=Ready"} {
		r := check(t, "-n", ns, "pod/resized", "--until", until, "--timeout", "10s")
		wantVerdict(t, r, 3, "not met")
		wantStderr(t, r, "got Ready=True of generation 1, not the current 2")
		t.Logf("--until %s:\n%s", until, r.Stderr)
	}
	out, err := env.KubectlErr("wait", "-n", ns, "--for=condition=Ready", "pod/resized", "--timeout", "10s")
	t.Logf("kubectl wait of generation 1's Ready: exit %d: %s", harness.ExitCode(err), strings.TrimSpace(out))
	if err == nil {
		t.Fatalf("kubectl wait took Ready=True of generation 1 as met: %s", out)
	}

	s := env.Start(t, "-n", ns, "pod/resized", "--until", "ready", "--timeout", "2m")
	s.WaitLines(`^SYNC\s+resized\s`, 1, time.Minute)
	harness.SetReadyOf(t, cs, ns, "resized", 2)
	r := s.Wait(runLimit)
	wantVerdict(t, r, 0, "met")
	out, err = env.KubectlErr("wait", "-n", ns, "--for=condition=Ready", "pod/resized", "--timeout", "10s")
	t.Logf("kubectl wait of generation 2's Ready: exit %d: %s", harness.ExitCode(err), strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("kubectl wait of generation 2's Ready: %v: %s", err, out)
	}
}

func getPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := env.Clientset(t).CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod %s/%s: %v", ns, name, err)
	}
	return p
}

func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
