package check

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// onNode binds the pod to a node.
func onNode(name string) podOpt {
	return func(p *corev1.Pod) { p.Spec.NodeName = name }
}

// A pod on a node that is gone and that does not satisfy the conditions
// is neither judged nor counted; one that satisfies them is asked nothing;
// learned later, the pod observed again counts no more.
func TestEvaluatorNodeGone(t *testing.T) {
	gone := map[string]bool{}
	var asked []string
	e := NewEvaluator(untilSpec("ready"))
	e.SetNodeGone(func(key string, pod *corev1.Pod) bool {
		asked = append(asked, key)
		return gone[pod.Spec.NodeName]
	})
	good := newPod("good", onNode("a"), ready())
	stuck := newPod("stuck", onNode("b"), phase(corev1.PodPending), waiting("app", "ContainerCreating", "", 0))
	e.Observe("ns/good", good, true)
	e.Observe("ns/stuck", stuck, true)
	if v := e.Verdict(); v.State != Pending || v.Unsatisfied != 1 || v.NodeGone != 0 {
		t.Fatalf("node there: %+v, want pending with 1 unsatisfied", v)
	}
	if strings.Join(asked, ",") != "ns/stuck" {
		t.Errorf("asked about %v, want the unsatisfied pod alone", asked)
	}
	gone["b"] = true
	e.Observe("ns/stuck", stuck, false)
	v := e.Verdict()
	if v.State != Met || v.Counted() != 1 || v.NodeGone != 1 {
		t.Fatalf("node gone: %+v, want met counting 1 pod", v)
	}
	if want := "all 1 matching pods satisfy ready, not counting 1 pod on a deleted node"; v.String() != want {
		t.Errorf("reason %q, want %q", v.String(), want)
	}
	e.Forget("ns/stuck")
	if v := e.Verdict(); v.NodeGone != 0 || v.Pods != 1 {
		t.Errorf("after the pod went: %+v, want no pod on a deleted node", v)
	}
}
