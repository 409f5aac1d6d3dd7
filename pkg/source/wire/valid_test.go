package wire

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/podtest"
)

// leanOf is the lean pod's bytes of a served pod.
func leanOf(t testing.TB, p *corev1.Pod) []byte {
	t.Helper()
	raw, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var parts podParts
	if err := eachField(raw, parts.take); err != nil {
		t.Fatal(err)
	}
	lean, err := appendLean(nil, parts)
	if err != nil {
		t.Fatal(err)
	}
	return lean
}

// variedPods hold every part a lean pod keeps: the node, init containers, waiting,
// running and terminated states, a last state, conditions with reasons.
func variedPods() []*corev1.Pod {
	crashed := podtest.Pod("ns", "crash", "2")
	crashed.Spec.InitContainers = []corev1.Container{{Name: "init", RestartPolicy: new(corev1.ContainerRestartPolicyAlways)}}
	crashed.Spec.NodeName = "node-1"
	crashed.Status = corev1.PodStatus{Phase: corev1.PodRunning, Reason: "r", Message: "m",
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady",
			Message: "not ready", LastProbeTime: metav1.Now(), LastTransitionTime: metav1.Now(), ObservedGeneration: 3}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", RestartCount: 4, Started: new(false),
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Signal: 9,
				Reason: "Error", Message: "boom", StartedAt: metav1.Now(), FinishedAt: metav1.Now(), ContainerID: "c://1"}}}},
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}},
	}
	plain := podtest.Pod("ns", "plain", "1")
	return []*corev1.Pod{podtest.BenchPod(), &plain, &crashed}
}

// The walk takes the lean pods the server's pods make, so a row costs no
// decoding; were it to refuse them, the rows would still be right, only
// slower, and nothing else would tell.
func TestWalkTakesServedPods(t *testing.T) {
	for _, p := range variedPods() {
		if !walk(leanOf(t, p), leanPodMessage()) {
			t.Errorf("%s: the walk refused a served pod's lean bytes", p.Name)
		}
	}
}

// What the walk refuses is decided by decoding: a field of the wrong wire
// type is an error, an unknown field is not.
func TestLeanErrorDecidesWhatTheWalkRefuses(t *testing.T) {
	lean := leanOf(t, variedPods()[2])
	wrongType := protowire.AppendVarint(protowire.AppendTag(bytes.Clone(lean), podStatus, protowire.VarintType), 1)
	unknown := protowire.AppendVarint(protowire.AppendTag(bytes.Clone(lean), 99, protowire.VarintType), 1)
	cut := lean[:len(lean)-3]
	for name, c := range map[string]struct {
		raw       []byte
		walks, ok bool
	}{
		"served":              {lean, true, true},
		"status as a varint":  {wrongType, false, false},
		"an unknown field":    {unknown, true, true},
		"cut inside a status": {cut, false, false},
	} {
		if got := walk(c.raw, leanPodMessage()); got != c.walks {
			t.Errorf("%s: walk %v, want %v", name, got, c.walks)
		}
		if err := leanError(c.raw); (err == nil) != c.ok {
			t.Errorf("%s: leanError %v, want ok=%v", name, err, c.ok)
		}
	}
}

// What the walk takes, the decoder decodes: a pod it wrongly took would
// be a row whose reads are its metadata alone.
func FuzzWalkTakesOnlyWhatDecodes(f *testing.F) {
	for _, p := range variedPods() {
		f.Add(leanOf(f, p))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !walk(raw, leanPodMessage()) {
			return
		}
		if err := (&corev1.Pod{}).Unmarshal(raw); err != nil {
			t.Errorf("the walk took bytes that do not decode: %v", err)
		}
	})
}
