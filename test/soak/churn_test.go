package soak

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// churn keeps a steady number of pods in a namespace while it changes
// them: each step replaces the oldest pod with a new one (a new name and
// UID: one deletion, one creation) and relabels another. The pods held
// stay the same in number; the changes seen, names and UIDs keep growing.
type churn struct {
	cs   kubernetes.Interface
	ns   string
	pods int
	// steps is the number of steps per second.
	steps float64
	// made counts the writes that succeeded; failed those that did not
	// (the API server the churn writes through is not the one restarted,
	// but a write can still fail while etcd is busy).
	made, failed atomic.Int64
	next         int
	live         []string
}

func (c *churn) podName() string {
	c.next++
	return fmt.Sprintf("churn-%06d", c.next)
}

// fill creates the steady set of pods.
func (c *churn) fill(ctx context.Context) error {
	for len(c.live) < c.pods {
		name := c.podName()
		if err := c.create(ctx, name); err != nil {
			return err
		}
		c.live = append(c.live, name)
	}
	return nil
}

// run changes the pods until ctx ends.
func (c *churn) run(ctx context.Context) {
	tick := time.NewTicker(time.Duration(float64(time.Second) / c.steps))
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		c.step(ctx, i)
	}
}

func (c *churn) step(ctx context.Context, i int) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	old, name := c.live[0], c.podName()
	c.count(c.delete(ctx, old))
	c.live = append(c.live[1:], name)
	c.count(c.create(ctx, name))
	target := c.live[i%len(c.live)]
	patch := fmt.Sprintf(`{"metadata":{"labels":{"step":"%d"}}}`, i)
	_, err := c.cs.CoreV1().Pods(c.ns).Patch(ctx, target, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	c.count(err)
}

func (c *churn) count(err error) {
	if err != nil {
		c.failed.Add(1)
		return
	}
	c.made.Add(1)
}

func (c *churn) create(ctx context.Context, name string) error {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "churn"}},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	if _, err := c.cs.CoreV1().Pods(c.ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create pod %s: %w", name, err)
	}
	return nil
}

func (c *churn) delete(ctx context.Context, name string) error {
	err := c.cs.CoreV1().Pods(c.ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	if err != nil {
		return fmt.Errorf("delete pod %s: %w", name, err)
	}
	return nil
}
