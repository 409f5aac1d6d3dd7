package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Labels and annotations the bench puts on its objects.
const (
	benchLabel       = "podsync.bench/load"
	sentAnnotation   = "podsync.bench/sent"
	seqAnnotation    = "podsync.bench/seq"
	sentinelAnnotate = "podsync.bench/sentinel"
	fieldManager     = "podsync-bench"
	kwokNodePrefix   = "kwok-node-"
	benchNodePrefix  = "bench-node-"
)

// loader creates the bench's pods, with their namespaces, nodes and
// ReplicaSet owners, and makes them Running and Ready.
type loader struct {
	e     *env
	cs    kubernetes.Interface
	rest  *rest.Config
	total int // pods loaded so far

	owners sync.Map // app index -> types.UID
	setup  bool
}

// loadStats says how the pods got there.
type loadStats struct {
	Created   int
	Took      time.Duration
	ReadyWait time.Duration
	Rate      float64 // pods per second, creation and status together
}

// clientConfig is a protobuf client without client-side rate limits.
func clientConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	cfg.UserAgent = "podsync-bench"
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.QPS, cfg.Burst = -1, 0
	cfg.Timeout = 2 * time.Minute
	return cfg, nil
}

func newLoader(e *env) (*loader, error) {
	cfg, err := clientConfig(e.kubeconfig)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("clientset: %w", err)
	}
	return &loader{e: e, cs: cs, rest: cfg}, nil
}

// adoptShape takes an attached cluster's pod shape from one of its pods,
// so that the report describes the pods measured and a grown cluster gets
// more of the same; a -pod-shape that contradicts them is an error.
func (e *env) adoptShape(ctx context.Context) error {
	l, err := newLoader(e)
	if err != nil {
		return err
	}
	pods, err := l.cs.CoreV1().Pods(l.namespace(0)).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return fmt.Errorf("read the attached cluster's pod shape: %w", err)
	}
	if len(pods.Items) == 0 {
		return nil
	}
	shape := "deployment"
	if len(pods.Items[0].Spec.Containers) == 1 {
		shape = "small"
	}
	switch {
	case !e.cfg.shapeGiven:
		e.cfg.shape = shape
	case e.cfg.shape != shape:
		return usageError{fmt.Errorf("-pod-shape %s, but the pods of the cluster in %s are %s", e.cfg.shape, e.cfg.attach, shape)}
	}
	return nil
}

func (l *loader) namespace(app int) string {
	return fmt.Sprintf("bench-%02d", app%l.e.cfg.namespaces)
}

func appName(app int) string { return fmt.Sprintf("svc-%04d", app) }

// templateHash is a pod-template-hash-like label value per app.
func templateHash(app int) string {
	sum := sha256.Sum256([]byte(appName(app)))
	return safeEncode(sum[:], 10)
}

// safeEncode maps bytes to Kubernetes' random-name alphabet.
func safeEncode(b []byte, n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	out := make([]byte, n)
	for i := range out {
		out[i] = alphabet[int(b[i%len(b)])%len(alphabet)]
	}
	return string(out)
}

// podName is stable for an index, so loading is idempotent.
func (l *loader) podName(i int) string {
	app := i / l.e.cfg.perApp
	sum := sha256.Sum256(fmt.Appendf(nil, "pod-%d", i))
	return appName(app) + "-" + templateHash(app) + "-" + safeEncode(sum[:], 5)
}

func (l *loader) podNamespace(i int) string { return l.namespace(i / l.e.cfg.perApp) }

func (l *loader) podKey(i int) string { return l.podNamespace(i) + "/" + l.podName(i) }

func (l *loader) nodeOf(i int) (name, nodeIP, podIP string) {
	node := i % l.e.cfg.nodes
	j := i / l.e.cfg.nodes
	if l.e.cfg.status == "kwok" {
		// kwok assigns the IPs itself.
		return fmt.Sprintf("%s%d", kwokNodePrefix, node), "", ""
	}
	return fmt.Sprintf("%s%02d", benchNodePrefix, node), fmt.Sprintf("10.65.0.%d", node+1),
		fmt.Sprintf("10.%d.%d.%d", 160+node, j/250, j%250+2)
}

// ensure brings the cluster to n Running, Ready bench pods.
func (l *loader) ensure(ctx context.Context, n int) (loadStats, error) {
	var st loadStats
	if !l.setup {
		if err := l.prepare(ctx); err != nil {
			return st, err
		}
		l.setup = true
	}
	existing, err := l.existing(ctx)
	if err != nil {
		return st, err
	}
	start := time.Now()
	var todo []int
	for i := range n {
		if !existing[l.podKey(i)] {
			todo = append(todo, i)
		}
	}
	l.e.logf("loading %d pods (%d there already) with %d goroutines, statuses by %s", len(todo), n-len(todo), l.e.cfg.loaders, l.e.cfg.status)
	if err := l.createAll(ctx, todo); err != nil {
		return st, err
	}
	st.Created, st.Took = len(todo), time.Since(start)
	ready := time.Now()
	if err := l.waitReady(ctx, n); err != nil {
		return st, err
	}
	st.ReadyWait = time.Since(ready)
	if total := time.Since(start).Seconds(); total > 0 && len(todo) > 0 {
		st.Rate = float64(len(todo)) / total
	}
	l.total = n
	return st, nil
}

// prepare creates namespaces with their default ServiceAccount (the
// controller manager that would create it is stopped) and, for -status
// self, nodes that kwok does not manage.
func (l *loader) prepare(ctx context.Context) error {
	for i := range l.e.cfg.namespaces {
		ns := fmt.Sprintf("bench-%02d", i)
		_, err := l.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
		_, err = l.cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create service account %s/default: %w", ns, err)
		}
	}
	if l.e.cfg.status != "self" {
		return nil
	}
	for i := range l.e.cfg.nodes {
		if err := l.ensureNode(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

func (l *loader) ensureNode(ctx context.Context, i int) error {
	name, nodeIP, _ := l.nodeOf(i)
	res := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("50k"),
		corev1.ResourceMemory:           resource.MustParse("50Ti"),
		corev1.ResourceEphemeralStorage: resource.MustParse("50Ti"),
		corev1.ResourcePods:             resource.MustParse("50000"),
	}
	cidr := fmt.Sprintf("10.%d.0.0/16", 160+i)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", benchLabel: "node",
		}},
		Spec: corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr}},
	}
	got, err := l.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{FieldManager: fieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create node %s: %w", name, err)
	}
	now := metav1.Now()
	got.Status = corev1.NodeStatus{
		Capacity: res, Allocatable: res,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now}},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: nodeIP}, {Type: corev1.NodeHostName, Address: name}},
		NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "amd64", ContainerRuntimeVersion: "containerd://2.1.0"},
	}
	if _, err := l.cs.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		return fmt.Errorf("node %s status: %w", name, err)
	}
	return nil
}

// existing returns the keys of the bench pods that exist now.
func (l *loader) existing(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	err := eachPod(ctx, l.cs, metav1.ListOptions{LabelSelector: benchLabel}, func(p *corev1.Pod) {
		out[p.Namespace+"/"+p.Name] = true
	})
	return out, err
}

// eachPod runs fn on every pod of a paginated protobuf list.
func eachPod(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions, fn func(*corev1.Pod)) error {
	opts.Limit = 500
	for page := 0; page < 1_000_000; page++ {
		list, err := cs.CoreV1().Pods("").List(ctx, opts)
		if err != nil {
			return fmt.Errorf("list pods: %w", err)
		}
		for i := range list.Items {
			fn(&list.Items[i])
		}
		if list.Continue == "" {
			return nil
		}
		opts.Continue = list.Continue
	}
	return errors.New("list pods: too many pages")
}

// createAll creates the pods of todo (and their owners) with many
// goroutines; the first error stops them all.
func (l *loader) createAll(ctx context.Context, todo []int) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	jobs := make(chan int)
	var done atomic.Int64
	var wg sync.WaitGroup
	for range l.e.cfg.loaders {
		wg.Go(func() {
			for i := range jobs {
				if err := l.createPod(ctx, i); err != nil {
					cancel(err)
					return
				}
				done.Add(1)
			}
		})
	}
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	start := time.Now()
feed:
	for _, i := range todo {
		select {
		case <-tick.C:
			d := done.Load()
			l.e.logf("  %d/%d pods (%.0f/s)", d, len(todo), float64(d)/time.Since(start).Seconds())
		default:
		}
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}

func (l *loader) owner(ctx context.Context, app int) (types.UID, error) {
	if uid, ok := l.owners.Load(app); ok {
		return uid.(types.UID), nil
	}
	ns, name := l.namespace(app), appName(app)+"-"+templateHash(app)
	labels := map[string]string{"app": appName(app), "pod-template-hash": templateHash(app)}
	replicas := int32(l.e.cfg.perApp)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: l.podSpec(app, "")},
		},
	}
	got, err := l.cs.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{FieldManager: fieldManager})
	if apierrors.IsAlreadyExists(err) {
		got, err = l.cs.AppsV1().ReplicaSets(ns).Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return "", fmt.Errorf("replica set %s/%s: %w", ns, name, err)
	}
	uid, _ := l.owners.LoadOrStore(app, got.UID)
	return uid.(types.UID), nil
}

func (l *loader) createPod(ctx context.Context, i int) error {
	app := i / l.e.cfg.perApp
	uid, err := l.owner(ctx, app)
	if err != nil {
		return err
	}
	node, nodeIP, podIP := l.nodeOf(i)
	pod := l.pod(i, app, uid, node)
	pods := l.cs.CoreV1().Pods(pod.Namespace)
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{FieldManager: fieldManager})
	if apierrors.IsAlreadyExists(err) {
		if l.e.cfg.status != "self" {
			return nil
		}
		created, err = pods.Get(ctx, pod.Name, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if l.e.cfg.status != "self" || podReady(created) {
		return nil
	}
	for attempt := 0; ; attempt++ {
		created.Status = runningStatus(created, nodeIP, podIP)
		_, err = pods.UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: fieldManager})
		if err == nil {
			return nil
		}
		if !apierrors.IsConflict(err) || attempt >= 5 {
			return fmt.Errorf("status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		if created, err = pods.Get(ctx, pod.Name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
}

// pod is a Deployment-made pod as it looks in a real cluster: labels app
// and pod-template-hash, a controller reference to its ReplicaSet, two
// containers with images, ports, resources, env and probes.
func (l *loader) pod(i, app int, owner types.UID, node string) *corev1.Pod {
	yes := true
	rs := appName(app) + "-" + templateHash(app)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      l.podName(i),
			Namespace: l.namespace(app),
			Labels: map[string]string{
				"app": appName(app), "pod-template-hash": templateHash(app),
				"app.kubernetes.io/part-of": "shop", benchLabel: "pod",
			},
			Annotations: l.annotations(),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs, UID: owner,
				Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Spec: l.podSpec(app, node),
	}
}

func (l *loader) annotations() map[string]string {
	if l.e.cfg.shape == "small" {
		return nil
	}
	return map[string]string{
		"prometheus.io/scrape": "true", "prometheus.io/port": "9102",
		"kubectl.kubernetes.io/default-container": "app",
	}
}

// podSpec is the spec of -pod-shape: small pods keep one container with
// its requests and nothing the API server adds to every pod.
func (l *loader) podSpec(app int, node string) corev1.PodSpec {
	if l.e.cfg.shape != "small" {
		return podSpec(app, node)
	}
	no := false
	return corev1.PodSpec{
		NodeName:                     node,
		AutomountServiceAccountToken: &no,
		Containers: []corev1.Container{{
			Name:  "app",
			Image: fmt.Sprintf("registry.example.com/shop/%s:1.%d.3", appName(app), app%17),
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			},
		}},
	}
}

func podSpec(app int, node string) corev1.PodSpec {
	grace := int64(30)
	probe := func(path string, delay int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("http")}},
			InitialDelaySeconds: delay, PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
		}
	}
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	return corev1.PodSpec{
		NodeName:                      node,
		TerminationGracePeriodSeconds: &grace,
		Containers: []corev1.Container{
			{
				Name:  "app",
				Image: fmt.Sprintf("registry.example.com/shop/%s:1.%d.3", appName(app), app%17),
				Args:  []string{"--listen=:8080", "--metrics=:9102", "--log-format=json"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}, {Name: "metrics", ContainerPort: 9102, Protocol: corev1.ProtocolTCP}},
				Env: []corev1.EnvVar{
					{Name: "POD_NAME", ValueFrom: field("metadata.name")},
					{Name: "POD_NAMESPACE", ValueFrom: field("metadata.namespace")},
					{Name: "POD_IP", ValueFrom: field("status.podIP")},
					{Name: "LOG_LEVEL", Value: "info"},
					{Name: "DATABASE_URL", Value: "postgres://shop@db.shop.svc:5432/shop"},
					{Name: "CACHE_TTL", Value: "30s"},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
				ReadinessProbe:           probe("/ready", 2),
				LivenessProbe:            probe("/healthz", 10),
				VolumeMounts:             []corev1.VolumeMount{{Name: "config", MountPath: "/etc/shop", ReadOnly: true}},
				ImagePullPolicy:          corev1.PullIfNotPresent,
				TerminationMessagePath:   corev1.TerminationMessagePathDefault,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			},
			{
				Name:  "proxy",
				Image: "docker.io/envoyproxy/envoy:v1.34.1",
				Args:  []string{"-c", "/etc/envoy/envoy.yaml", "--log-level", "warn"},
				Ports: []corev1.ContainerPort{{Name: "admin", ContainerPort: 9901, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
				},
				ImagePullPolicy:          corev1.PullIfNotPresent,
				TerminationMessagePath:   corev1.TerminationMessagePathDefault,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			},
		},
		Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: appName(app) + "-config"}}}}},
	}
}

// runningStatus is what a kubelet reports for a started, ready pod.
func runningStatus(p *corev1.Pod, nodeIP, podIP string) corev1.PodStatus {
	started := metav1.NewTime(p.CreationTimestamp.Add(2 * time.Second))
	ready := metav1.NewTime(p.CreationTimestamp.Add(4 * time.Second))
	cond := func(t corev1.PodConditionType, at metav1.Time) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: at}
	}
	st := corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			cond(corev1.PodReadyToStartContainers, started), cond(corev1.PodInitialized, p.CreationTimestamp),
			cond(corev1.PodReady, ready), cond(corev1.ContainersReady, ready), cond(corev1.PodScheduled, p.CreationTimestamp),
		},
		HostIP: nodeIP, HostIPs: []corev1.HostIP{{IP: nodeIP}},
		PodIP: podIP, PodIPs: []corev1.PodIP{{IP: podIP}},
		StartTime: &p.CreationTimestamp,
		QOSClass:  p.Status.QOSClass,
	}
	for _, c := range p.Spec.Containers {
		id := sha256.Sum256([]byte(p.Namespace + "/" + p.Name + "/" + c.Name))
		img := sha256.Sum256([]byte(c.Image))
		yes := true
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image + "@sha256:" + hex.EncodeToString(img[:]),
			ContainerID: "containerd://" + hex.EncodeToString(id[:]),
			Ready:       true, Started: &yes,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
		})
	}
	return st
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitReady polls until n bench pods are Running and Ready.
func (l *loader) waitReady(ctx context.Context, n int) error {
	limit := 2*time.Minute + time.Duration(n)*10*time.Millisecond
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		ready, total := 0, 0
		err := eachPod(ctx, l.cs, metav1.ListOptions{LabelSelector: benchLabel}, func(p *corev1.Pod) {
			total++
			if podReady(p) {
				ready++
			}
		})
		if err == nil && ready >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d pods Running and Ready after %s (last error: %v)", ready, total, limit, err)
		case <-time.After(2 * time.Second):
		}
		l.e.logf("  %d/%d pods Running and Ready", ready, n)
	}
}
