package podsync_test

import (
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
)

// --request-timeout bounds requests, never a watch (row 5): the clients
// that watch have no client timeout in every output mode.
func TestNewClientsWatchWithoutTimeout(t *testing.T) {
	c, err := podsync.NewClients(&rest.Config{Host: "https://127.0.0.1:1", Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	timeout := func(i rest.Interface) time.Duration { return i.(*rest.RESTClient).Client.Timeout }
	if got := timeout(c.Kube.CoreV1().RESTClient()); got != 2*time.Second {
		t.Errorf("list client timeout %s, want --request-timeout 2s", got)
	}
	if got := timeout(c.Table); got != 2*time.Second {
		t.Errorf("table list client timeout %s, want 2s", got)
	}
	if a, b := timeout(c.KubeWatch.CoreV1().RESTClient()), timeout(c.TableWatch); a != 0 || b != 0 {
		t.Errorf("watch clients time out after %s and %s, want never", a, b)
	}
}
