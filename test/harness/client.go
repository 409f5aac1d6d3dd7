package harness

import (
	"testing"

	"k8s.io/client-go/kubernetes"
)

// Clientset is an admin client of the package's cluster, for changes a
// test must make faster than kubectl can (bursts of updates).
func (e *Env) Clientset(t testing.TB) kubernetes.Interface {
	t.Helper()
	if e.Cluster == nil {
		t.Fatal("no cluster: this package runs with Config.NoCluster")
	}
	cfg, err := e.Cluster.RESTConfig()
	if err != nil {
		t.Fatalf("cluster REST config: %v", err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	return c
}
