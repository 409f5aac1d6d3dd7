package podsync_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
)

// A check that prints nothing says what it waits on, once per quiet
// interval; a plain stream never does.
func TestProgressLine(t *testing.T) {
	for _, until := range []string{"ready", ""} {
		s := newSim(true)
		s.put(&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "a", Labels: map[string]string{"app": "sim"}},
			Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
				Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
			}}},
		})
		cfg, _, stderr := runConfig(t, until, "")
		cfg.Timeout, cfg.ProgressInterval = 1100*time.Millisecond, 300*time.Millisecond
		podsync.Run(context.Background(), cfg, podsync.Cluster{Source: s.source()})
		lines := regexp.MustCompile(`(?m)^podsync: waiting .*$`).FindAllString(stderr.String(), -1)
		if until == "" {
			if len(lines) != 0 {
				t.Errorf("a plain stream wrote progress lines: %q", lines)
			}
			continue
		}
		if len(lines) < 2 || len(lines) > 4 {
			t.Fatalf("%d progress lines in 1.1s at 300ms, want about 3:\n%s", len(lines), stderr)
		}
		re := regexp.MustCompile(`^podsync: waiting \d+ms: 1 of 1 matching pods do not satisfy ready; web-1 ContainerCreating \(unchanged for \d+ms\)$`)
		if !re.MatchString(lines[0]) {
			t.Errorf("progress line %q does not match %s", lines[0], re)
		}
		if strings.Count(stderr.String(), "\n") < len(lines) {
			t.Error("progress lines are not lines")
		}
	}
}

// Whatever the status holds, a progress line stays a line of readable
// length: each part is cut like any cluster text.
func TestProgressLineIsBounded(t *testing.T) {
	s := newSim(true)
	huge := strings.Repeat("Waiting", 20000)
	for _, name := range []string{"web-1", "web-2", "web-3"} {
		s.put(&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "a", Labels: map[string]string{"app": "sim"}},
			Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
				Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: huge}},
			}}},
		})
	}
	cfg, _, stderr := runConfig(t, "ready", "")
	cfg.Timeout, cfg.ProgressInterval = 700*time.Millisecond, 300*time.Millisecond
	podsync.Run(context.Background(), cfg, podsync.Cluster{Source: s.source()})
	lines := regexp.MustCompile(`(?m)^podsync: waiting .*$`).FindAllString(stderr.String(), -1)
	if len(lines) == 0 {
		t.Fatalf("no progress line:\n%.2000s", stderr)
	}
	for _, l := range lines {
		if n := len([]rune(l)); n > 2100 {
			t.Errorf("progress line of %d runes: %.200s…", n, l)
		}
		if !strings.Contains(l, "…") {
			t.Errorf("progress line not cut: %.200s…", l)
		}
	}
}
