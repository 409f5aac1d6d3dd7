package main

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// Each touch writes the same pod anew, and says so when there is none.
func TestToucherWritesOnePodEachTime(t *testing.T) {
	ctx := context.Background()
	empty := &toucher{cs: fake.NewClientset()}
	if err := empty.touch(ctx); err == nil || !strings.Contains(err.Error(), "the cluster has none") {
		t.Errorf("touch on a cluster without pods: %v", err)
	}
	cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "bench-00", Name: "p"}})
	live := &toucher{cs: cs}
	for i, want := range []string{"1", "2"} {
		if err := live.touch(ctx); err != nil {
			t.Fatal(err)
		}
		pod, err := cs.CoreV1().Pods("bench-00").Get(ctx, "p", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := pod.Annotations[liveAnnotation]; got != want {
			t.Errorf("write %d: annotation %q, want %q", i+1, got, want)
		}
	}
}

// The report says when pods were written before the runs.
func TestReportSaysWhenPodsWereWritten(t *testing.T) {
	for _, live := range []bool{false, true} {
		r := &report{cfg: &config{live: live}}
		got := strings.Contains(r.markdown(), "- pods written: one annotation of one pod before each measured run (-live)")
		if got != live {
			t.Errorf("-live=%v: the report's method says pods were written: %v", live, got)
		}
	}
}
