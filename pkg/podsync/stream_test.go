package podsync

import (
	"bytes"
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/output"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// newTestStream is a stream with one cluster and no informer: tests hand
// it messages as workers would.
func newTestStream(t *testing.T, spec check.Spec) (*stream, *clusterRun, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	var out, errOut bytes.Buffer
	format := "name"
	pf := get.NewGetPrintFlags()
	pf.OutputFormat = &format
	w, err := output.New(output.Options{PrintFlags: pf, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	s := newStream(context.Background(), Config{Output: w, ErrOut: &errOut, Check: spec}, false)
	c := &clusterRun{eval: check.NewEvaluator(spec), events: map[string]int{}}
	s.clusters = []*clusterRun{c}
	return s, c, &out, &errOut
}

func readyPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID("u-" + name)},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// A deletion whose last state nobody knows (a tombstone without an object)
// is not dropped silently: it is said on stderr, counted as GONE, and the
// pod stops counting for the check.
func TestGoneWithoutLastStateIsSaid(t *testing.T) {
	spec, err := check.Flags{Until: "ready", UntilSet: true, MinPods: check.Unset, MaxRestarts: check.Unset}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	s, c, out, errOut := newTestStream(t, spec)
	key := cache.ObjectName{Namespace: "a", Name: "p"}
	s.handle(c, []message.Message{{Type: message.Sync, Key: key, Row: wire.RowOf(readyPod("p"))}})
	s.handle(c, []message.Message{{Type: message.Gone, Key: key}})
	if got := errOut.String(); got != "warning: pod a/p was deleted while the watch was down; its last state is not known\n" {
		t.Errorf("stderr %q", got)
	}
	if c.events["GONE"] != 1 || c.eval.Verdict().Pods != 0 {
		t.Errorf("GONE counted %d times, %d pods still judged; want 1 and 0", c.events["GONE"], c.eval.Verdict().Pods)
	}
	if out.String() != "pod/p synced\n" {
		t.Errorf("stdout %q: a GONE without a state has nothing to print", out)
	}
}

// The check of several clusters is met only when met in each, and failed
// as soon as one fails.
func TestStateCombinesClusters(t *testing.T) {
	spec, err := check.Flags{Until: "ready", UntilSet: true, MinPods: check.Unset, MaxRestarts: check.Unset}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	s, a, _, _ := newTestStream(t, spec)
	b := &clusterRun{eval: check.NewEvaluator(spec), events: map[string]int{}}
	s.clusters = append(s.clusters, b)
	a.eval.Observe("a/p", readyPod("p"), true)
	if got := s.state(); got != check.Pending {
		t.Errorf("met in one cluster of two: %v, want pending", got)
	}
	b.eval.Observe("a/q", readyPod("q"), true)
	if got := s.state(); got != check.Met {
		t.Errorf("met in both: %v, want met", got)
	}
	crash := readyPod("r")
	crash.Status.Phase = corev1.PodFailed
	b.eval.Observe("a/r", crash, false)
	if got := s.state(); got != check.Failed {
		t.Errorf("failed in one: %v, want failed", got)
	}
}
