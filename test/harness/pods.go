package harness

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// SetLabel sets one label of a pod, failing the test on error.
func SetLabel(t testing.TB, cs kubernetes.Interface, ns, name, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
	if _, err := cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("label pod %s/%s: %v", ns, name, err)
	}
}

// DeleteNow deletes a pod without a grace period, so it is gone at once
// even when no kubelet (kwok) is there to confirm.
func DeleteNow(t testing.TB, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatalf("delete pod %s/%s: %v", ns, name, err)
	}
}

// WaitReady waits until kwok reports every named pod ready.
func WaitReady(t testing.TB, cs kubernetes.Interface, ns string, names ...string) {
	t.Helper()
	for _, name := range names {
		Eventually(t, 2*time.Minute, Text("pod "+ns+"/"+name+" to be ready"), func() bool {
			p, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
			return err == nil && IsReady(p)
		})
	}
}

// IsReady reports whether the pod's Ready condition is True.
func IsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// CountLines is how many lines of text match re.
func CountLines(text, re string) int {
	rx := regexp.MustCompile(re)
	n := 0
	for _, l := range strings.Split(text, "\n") {
		if rx.MatchString(l) {
			n++
		}
	}
	return n
}
