//go:build unix

package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// pollInterval is short because every wait of a warm start is brief and the
// checks are cheap loopback calls.
const pollInterval = 100 * time.Millisecond

// poll runs check until it returns nil. It fails early when a component in
// watch exits, and on timeout it blames the components in blame (quoting
// their logs).
func (c *Cluster) poll(ctx context.Context, what string, watch, blame []*component, check func(context.Context) error) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		for _, p := range watch {
			if gone, err := p.exited(); gone {
				return p.failure(fmt.Errorf("exited (%v) while waiting for %s", err, what))
			}
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		last := check(cctx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return blameFailure(fmt.Errorf("%s: %w (last error: %v)", what, ctx.Err(), last), blame)
		case <-tick.C:
		}
	}
}

func blameFailure(err error, blame []*component) error {
	if len(blame) == 1 {
		return blame[0].failure(err)
	}
	var b strings.Builder
	for _, p := range blame {
		fmt.Fprintf(&b, "\n--- last lines of %s ---\n%s", p.Log, p.logTail(8))
	}
	return fmt.Errorf("%w%s", err, b.String())
}

// all returns the components; the caller must not hold c.mu.
func (c *Cluster) all() []*component {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*component(nil), c.components...)
}

// core is the cluster's own components: not the API servers a test
// added (StartAPIServer), which it may have ended since.
func (c *Cluster) core() []*component {
	return c.named(Etcd, APIServer, ControllerManager, Scheduler, Kwok)
}

func (c *Cluster) named(names ...string) []*component {
	var out []*component
	for _, p := range c.all() {
		for _, n := range names {
			if p.Name == n {
				out = append(out, p)
			}
		}
	}
	return out
}

// waitHealthy polls the component's health URL until it answers 200.
func (c *Cluster) waitHealthy(ctx context.Context, p *component) error {
	if p.Health == "" {
		return nil
	}
	client, err := c.healthClient()
	if err != nil {
		return err
	}
	return c.poll(ctx, p.Health, []*component{p}, []*component{p}, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.Health, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
		}
		return nil
	})
}

// healthClient trusts only the cluster CA and presents the admin
// certificate, which /readyz of the API server wants for its details.
func (c *Cluster) healthClient() (*http.Client, error) {
	caPEM, err := os.ReadFile(c.pkiPath("ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("health check: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("health check: CA file holds no certificate")
	}
	cert, err := tls.LoadX509KeyPair(c.pkiPath("admin.crt"), c.pkiPath("admin.key"))
	if err != nil {
		return nil, fmt.Errorf("health check: %w", err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}, nil
}

func (c *Cluster) clientset() (kubernetes.Interface, error) {
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("admin client: %w", err)
	}
	return cs, nil
}

// createNodes registers the fake nodes, as kubelets would, and waits until
// kwok reports all of them Ready.
func (c *Cluster) createNodes(ctx context.Context, n int) error {
	cs, err := c.clientset()
	if err != nil {
		return err
	}
	for i := range n {
		_, err := cs.CoreV1().Nodes().Create(ctx, fakeNode(i), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", nodeName(i), err)
		}
	}
	return c.poll(ctx, "nodes to be Ready", c.all(), c.named(Kwok), func(ctx context.Context) error {
		for i := range n {
			node, err := cs.CoreV1().Nodes().Get(ctx, nodeName(i), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !nodeReady(node) {
				return fmt.Errorf("node %s is not Ready", node.Name)
			}
		}
		return nil
	})
}

// fakeNode is a node for kwok with room for 50,000 pods on its own, so any
// spread of a large test over the nodes fits. Every node has the address
// 127.0.0.1, as kwok serves the kubelet API of all of them on one port.
func fakeNode(i int) *corev1.Node {
	name := nodeName(i)
	res := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("50k"),
		corev1.ResourceMemory:           resource.MustParse("50Ti"),
		corev1.ResourceEphemeralStorage: resource.MustParse("50Ti"),
		corev1.ResourcePods:             resource.MustParse("50000"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
		},
		Spec: corev1.NodeSpec{PodCIDR: podCIDR(i), PodCIDRs: []string{podCIDR(i)}},
		// No addresses: kwok's node-initialize stage fills in 127.0.0.1 (its
		// --node-ip, where it serves container logs) and the kubelet port.
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res},
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// WaitWorking waits until the cluster works as after Start: every node
// Ready and free of the node lifecycle controller's taints, and a
// smoke-test Deployment's pod Ready (deployment and replica set
// controllers, scheduler and kwok). After the API server restarts, /readyz
// passes long before the other components are back: each re-connects on
// its own, after a back-off that grows with the outage, and a node whose
// lease looked stale meanwhile stays tainted until kwok renews it.
func (c *Cluster) WaitWorking(ctx context.Context) error {
	cs, err := c.clientset()
	if err != nil {
		return err
	}
	err = c.poll(ctx, "nodes to be Ready and untainted", c.core(), c.named(Kwok, ControllerManager), func(ctx context.Context) error {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for i := range nodes.Items {
			n := &nodes.Items[i]
			if !nodeReady(n) {
				return fmt.Errorf("node %s is not Ready", n.Name)
			}
			for _, taint := range n.Spec.Taints {
				if strings.HasPrefix(taint.Key, "node.kubernetes.io/") {
					return fmt.Errorf("node %s has the taint %s", n.Name, taint.Key)
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return c.smokeTest(ctx)
}

// waitDefaultServiceAccount waits for the controller manager to create the
// default ServiceAccount, without which the API server rejects pods.
func (c *Cluster) waitDefaultServiceAccount(ctx context.Context) error {
	cs, err := c.clientset()
	if err != nil {
		return err
	}
	return c.poll(ctx, "ServiceAccount default/default", c.all(), c.named(ControllerManager), func(ctx context.Context) error {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// smokeTest proves the whole chain (deployment and replica set controllers,
// scheduler, kwok) by running a one-pod Deployment to Ready, then removes
// it again so that tests start from an empty cluster.
func (c *Cluster) smokeTest(ctx context.Context) error {
	cs, err := c.clientset()
	if err != nil {
		return err
	}
	const ns, name = "kube-system", "podsync-smoke"
	deps := cs.AppsV1().Deployments(ns)
	// One left by a smoke test cut short is awaited like a new one.
	if _, err := deps.Create(ctx, smokeDeployment(name), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create smoke-test deployment: %w", err)
	}
	pods := cs.CoreV1().Pods(ns)
	sel := metav1.ListOptions{LabelSelector: "app=" + name}
	blame := c.named(ControllerManager, Scheduler, Kwok)
	err = c.poll(ctx, "a smoke-test pod to be Ready", c.core(), blame, func(ctx context.Context) error {
		list, err := pods.List(ctx, sel)
		if err != nil {
			return err
		}
		for i := range list.Items {
			if podReady(&list.Items[i]) {
				return nil
			}
		}
		return fmt.Errorf("%d smoke-test pods, none Ready", len(list.Items))
	})
	if err != nil {
		return err
	}
	bg := metav1.DeletePropagationBackground
	if err := deps.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		return fmt.Errorf("delete smoke-test deployment: %w", err)
	}
	return c.poll(ctx, "smoke-test pods to be deleted", c.core(), c.named(ControllerManager), func(ctx context.Context) error {
		list, err := pods.List(ctx, sel)
		if err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d smoke-test pods left", len(list.Items))
		}
		return nil
	})
}

func smokeDeployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	one, noGrace := int32(1), int64(0)
	// kwok's general stages read their delays from these annotations; zero
	// keeps the smoke test from waiting up to 10 s for simulated start-up.
	annotations := map[string]string{}
	for _, s := range []string{"pod-create", "pod-init-container-running", "pod-init-container-completed", "pod-ready", "pod-delete"} {
		annotations[s+".stage.kwok.x-k8s.io/delay"] = "0s"
		annotations[s+".stage.kwok.x-k8s.io/jitter-delay"] = "0s"
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: &noGrace,
					Containers:                    []corev1.Container{{Name: "smoke", Image: "pause:3.10"}},
				},
			},
		},
	}
}

func podReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
