package podsync

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// An explanation's Events are asked again while the server is busy, up to
// --max-retries attempts, and not at all again once refused.
func TestExplainEventsRetried(t *testing.T) {
	pod := readyPod("p")
	event := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "a", Name: "p", UID: pod.UID}, Reason: "BackOff", Type: "Warning"}
	cases := []struct {
		name     string
		failures []error
		want     int // events returned
		calls    int
		fails    bool
	}{
		{"busy twice, then answered", []error{apierrors.NewServiceUnavailable("busy"), apierrors.NewInternalError(errors.New("etcd"))}, 1, 3, false},
		{"busy every time", []error{apierrors.NewServiceUnavailable("1"), apierrors.NewServiceUnavailable("2"), apierrors.NewServiceUnavailable("3")}, 0, 3, true},
		{"refused", []error{apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", errors.New("RBAC"))}, 0, 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(event)
			calls := 0
			client.PrependReactor("list", "events", func(clienttesting.Action) (bool, runtime.Object, error) {
				calls++
				if calls <= len(tc.failures) {
					return true, nil, tc.failures[calls-1]
				}
				return false, nil, nil
			})
			s := &stream{cfg: Config{MaxRetries: 3}}
			c := &clusterRun{clients: &Clients{Kube: client}}
			events, err := s.events(context.Background(), c, pod)
			if len(events) != tc.want || calls != tc.calls || (err != nil) != tc.fails {
				t.Errorf("%d events after %d calls, error %v; want %d after %d, failing %v", len(events), calls, err, tc.want, tc.calls, tc.fails)
			}
		})
	}
}
