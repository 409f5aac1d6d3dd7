// Package podtest holds the pods and server bytes that the tests of the
// pod source and of its codec share.
package podtest

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/util/framer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
)

// Columns are the table columns of the tests.
var Columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name"},
	{Name: "Ready", Type: "string"},
	{Name: "Status", Type: "string"},
}

// Pod is a small running pod.
func Pod(ns, name, rv string) corev1.Pod {
	return corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv,
			Labels:        map[string]string{"app": "web"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec:   corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "web:1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// BenchPod is a pod of the size the bench loads: two containers, probes,
// env, resources, five conditions and managedFields from two managers.
func BenchPod() *corev1.Pod {
	p := Pod("bench-00", "svc-0001-h7wtvk49kb-4t5k7", "123456")
	c := corev1.Container{Name: "app", Image: "registry.example.com/shop/svc-0001:1.1.3",
		Args:  []string{"--listen=:8080", "--metrics=:9102", "--log-format=json"},
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: "TCP"}, {Name: "metrics", ContainerPort: 9102, Protocol: "TCP"}},
		Env:   []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "DATABASE_URL", Value: "postgres://shop@db.shop.svc:5432/shop"}}}
	p.Spec.Containers = []corev1.Container{c, {Name: "proxy", Image: "docker.io/envoyproxy/envoy:v1.34.1", Args: []string{"-c", "/etc/envoy/envoy.yaml"}}}
	for _, t := range []corev1.PodConditionType{"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"} {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: "True", LastTransitionTime: metav1.Now()})
	}
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: true,
			ImageID: c.Image + "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", ContainerID: "containerd://0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}})
	}
	fields := metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{".":{},"f:prometheus.io/port":{},"f:prometheus.io/scrape":{}},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:args":{},"f:image":{},"f:name":{}}}}}`)
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: "Update", FieldsType: "FieldsV1", FieldsV1: fields},
		{Manager: "kubelet", Operation: "Update", Subresource: "status", FieldsType: "FieldsV1", FieldsV1: fields}}
	return &p
}

// EncodeWatch encodes events as the API server streams a protobuf watch:
// length-delimited frames of WatchEvents, each object in its envelope.
func EncodeWatch(t testing.TB, events ...watch.Event) []byte {
	t.Helper()
	var out bytes.Buffer
	objects := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	enc := streaming.NewEncoder(framer.NewLengthDelimitedFrameWriter(&out), protobuf.NewRawSerializer(scheme.Scheme, scheme.Scheme))
	for _, ev := range events {
		gvks, _, err := scheme.Scheme.ObjectKinds(ev.Object)
		if err != nil {
			t.Fatal(err)
		}
		ev.Object.GetObjectKind().SetGroupVersionKind(gvks[0])
		var raw bytes.Buffer
		if err := objects.Encode(ev.Object, &raw); err != nil {
			t.Fatal(err)
		}
		if err := enc.Encode(&metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: raw.Bytes()}}); err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes()
}

// RoundTrip is the pod as a typed client decodes it from protobuf.
func RoundTrip(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	_, out := Served(t, p)
	return out
}

// Served is the pod's protobuf bytes, as the server sends them, and the
// pod a typed client decodes from them.
func Served(t testing.TB, p *corev1.Pod) ([]byte, *corev1.Pod) {
	t.Helper()
	raw, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	out := &corev1.Pod{}
	if err := out.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	return raw, out
}
