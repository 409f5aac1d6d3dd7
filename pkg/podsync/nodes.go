package podsync

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// A pod of a DaemonSet bound to a node that was deleted stays (Pending,
// most often) until the pod garbage collector deletes it, about a minute
// later; the DaemonSet controller stops counting it at once, and so does
// `kubectl rollout status`. The check does the same (see
// check.Evaluator.SetNodeGone): it asks whether the node of such a pod
// exists, and only for the DaemonSet targets' pods that do not satisfy
// the conditions. A node is asked about at most once per nodeRecheck.
const (
	nodeRecheck  = 5 * time.Second
	nodeLookTime = 10 * time.Second
)

// nodeAnswer is what one GET of a node of clusters[cluster] found.
type nodeAnswer struct {
	cluster int
	node    string
	gone    bool
	err     error
}

// nodeLooks is what a targetRun learned of the nodes of its DaemonSet
// pods; the stream goroutine alone uses it.
type nodeLooks struct {
	kube    kubernetes.Interface
	answers chan<- nodeAnswer
	nodes   map[string]*nodeLook
	// forbidden: the run may not get nodes, and judges every pod.
	forbidden bool
}

type nodeLook struct {
	gone    bool
	asking  bool
	askedAt time.Time
	// keys are the pods waiting on the node's answer, to observe again.
	keys map[string]bool
}

// nodeGone is the Evaluator's SetNodeGone: the pod is a DaemonSet
// target's, and its node is known to be gone. Not known yet, it asks, and
// the answer observes the pod again.
func (t *targetRun) nodeGone(key string, pod *corev1.Pod) bool {
	n := pod.Spec.NodeName
	if n == "" || t.looks.kube == nil || t.looks.forbidden || !t.ofDaemonSet(key) {
		return false
	}
	l := t.looks.nodes[n]
	if l == nil {
		l = &nodeLook{keys: map[string]bool{}}
		t.looks.nodes[n] = l
	}
	if l.gone {
		return true
	}
	l.keys[key] = true
	if !l.asking && time.Since(l.askedAt) >= nodeRecheck {
		l.asking, l.askedAt = true, time.Now()
		go t.lookAtNode(n)
	}
	return false
}

// ofDaemonSet reports whether a DaemonSet target owns the pod.
func (t *targetRun) ofDaemonSet(key string) bool {
	for _, ts := range t.owners[key] {
		if ts.target.Kind == check.TargetDaemonSet {
			return true
		}
	}
	return false
}

// lookAtNode gets the node. A node that exists is answered only after
// nodeRecheck: the pods still waiting on it ask again then.
func (t *targetRun) lookAtNode(name string) {
	ctx, cancel := context.WithTimeout(t.ctx, nodeLookTime)
	_, err := t.looks.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	cancel()
	ans := nodeAnswer{cluster: t.cluster, node: name, gone: apierrors.IsNotFound(err)}
	if err != nil && !ans.gone {
		ans.err = err
	}
	if !ans.gone && !apierrors.IsForbidden(err) {
		select {
		case <-time.After(nodeRecheck):
		case <-t.ctx.Done():
			return
		}
	}
	select {
	case t.looks.answers <- ans:
	case <-t.ctx.Done():
	}
}

// nodeAnswered records an answer and observes again the pods that
// waited on it, as the informer holds them.
func (t *targetRun) nodeAnswered(a nodeAnswer, eval *check.Evaluator) {
	l := t.looks.nodes[a.node]
	if l == nil {
		return
	}
	l.asking, l.gone = false, a.gone
	if apierrors.IsForbidden(a.err) && !t.looks.forbidden {
		t.looks.forbidden = true
		klog.V(2).Infof("podsync: %sthe pods of DaemonSets on deleted nodes are judged: nodes cannot be read: %v", t.prefix, a.err)
	} else if a.err != nil {
		klog.V(4).Infof("podsync: %snode %s: %v", t.prefix, a.node, a.err)
	}
	keys := l.keys
	l.keys = map[string]bool{}
	if t.ctrl == nil {
		return
	}
	for key := range keys {
		obj, ok, err := t.ctrl.Indexer().GetByKey(key)
		row, isRow := obj.(*wire.PodRow)
		if err != nil || !ok || !isRow {
			continue
		}
		eval.ObserveStatus(key, row.Pod(), wire.Cell(row, "Status"), false)
	}
}
