package output

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// The -o json fast path must print exactly what kubectl's JSON printer
// prints for the same WatchEvent, whatever the pod holds.
func TestEventJSONMatchesKubectlsPrinter(t *testing.T) {
	odd := row("web-1", "1/1", "Running", "0", "10.0.0.1", "7").Pod()
	odd.Annotations = map[string]string{
		"html":    `<a href="x">&amp;</a>`,
		"unicode": "snow ☃, line\u2028sep\u2029, tab\t, quote \", nul \u0000",
	}
	odd.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}
	grace := int64(0)
	odd.DeletionGracePeriodSeconds = &grace
	odd.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}}
	format := "json"
	flags := get.NewGetPrintFlags()
	flags.OutputFormat = &format
	w, err := New(Options{PrintFlags: flags, Out: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range []*corev1.Pod{row("web-2", "0/1", "Pending", "0", "<none>", "1").Pod(), odd, {}} {
		for _, typ := range []message.Type{message.Sync, message.Add, message.Update, message.Gone} {
			typed := typedPod(pod)
			var want bytes.Buffer
			p := &printers.OmitManagedFieldsPrinter{Delegate: &printers.JSONPrinter{}}
			if err := p.PrintObj(&metav1.WatchEvent{Type: typ.String(), Object: runtime.RawExtension{Object: typed}}, &want); err != nil {
				t.Fatal(err)
			}
			for _, r := range []*wire.PodRow{wire.RowOf(typed), packed(t, typed)} {
				w.buf.Reset()
				if err := w.printJSON(message.Message{Type: typ, Row: r}); err != nil {
					t.Fatal(err)
				}
				if got := w.buf.String(); got != want.String() {
					t.Errorf("%s %s (packed %v):\n got %s\nwant %s", typ, pod.Name, r.Raw != nil, got, want.String())
				}
			}
		}
	}
}

// BenchmarkEventJSON compares the -o json line through kubectl's printer
// with the fast path, for a pod of the bench's size.
func BenchmarkEventJSON(b *testing.B) {
	pod := typedPod(benchPod())
	format := "json"
	flags := get.NewGetPrintFlags()
	flags.OutputFormat = &format
	w, err := New(Options{PrintFlags: flags, Out: &bytes.Buffer{}})
	if err != nil {
		b.Fatal(err)
	}
	printer := &printers.OmitManagedFieldsPrinter{Delegate: &printers.JSONPrinter{}}
	var want bytes.Buffer
	if err := printer.PrintObj(&metav1.WatchEvent{Type: "UPDATE", Object: runtime.RawExtension{Object: pod}}, &want); err != nil {
		b.Fatal(err)
	}
	b.Run("kubectl-printer", func(b *testing.B) {
		var out bytes.Buffer
		b.ReportAllocs()
		for range b.N {
			out.Reset()
			if err := printer.PrintObj(&metav1.WatchEvent{Type: "UPDATE", Object: runtime.RawExtension{Object: pod}}, &out); err != nil {
				b.Fatal(err)
			}
		}
		if out.String() != want.String() {
			b.Fatal("the printer's line changed")
		}
	})
	for _, r := range []*wire.PodRow{wire.RowOf(pod), packed(b, pod)} {
		b.Run(map[bool]string{false: "fast-path", true: "packed-bytes"}[r.Raw != nil], func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				w.buf.Reset()
				if err := w.printJSON(message.Message{Type: message.Update, Row: r}); err != nil {
					b.Fatal(err)
				}
			}
			if w.buf.String() != want.String() {
				b.Fatal("the fast path printed another line than kubectl's printer")
			}
		})
	}
}

// packed is a packed row of pod, as -o json's source makes it.
func packed(t testing.TB, pod *corev1.Pod) *wire.PodRow {
	t.Helper()
	r := wire.RowOf(pod)
	if err := wire.Pack(r, false); err != nil {
		t.Fatal(err)
	}
	if r.Raw == nil {
		t.Fatal("Pack left the row unpacked")
	}
	return r
}

// benchPod is a pod as the bench loads it: two containers with ports, env,
// resources and probes, five conditions, two container statuses.
func benchPod() *corev1.Pod {
	p := row("svc-0001-h7wtvk49kb-4t5k7", "2/2", "Running", "0", "10.160.0.2", "123456").Pod()
	p.Annotations = map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9102"}
	c := corev1.Container{Name: "app", Image: "registry.example.com/shop/svc-0001:1.1.3",
		Args:  []string{"--listen=:8080", "--metrics=:9102", "--log-format=json"},
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: "TCP"}, {Name: "metrics", ContainerPort: 9102, Protocol: "TCP"}},
		Env:   []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "DATABASE_URL", Value: "postgres://shop@db.shop.svc:5432/shop"}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")}}}
	p.Spec.Containers = []corev1.Container{c, {Name: "proxy", Image: "docker.io/envoyproxy/envoy:v1.34.1", Args: []string{"-c", "/etc/envoy/envoy.yaml"}}}
	for _, t := range []corev1.PodConditionType{"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"} {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: "True", LastTransitionTime: metav1.NewTime(now)})
	}
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: true,
			ImageID: c.Image + "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", ContainerID: "containerd://0123456789abcdef0123456789abcdef",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}})
	}
	return p
}
