//go:build unix

package localcluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

func TestCheckNames(t *testing.T) {
	for _, names := range [][]string{nil, {""}, {"a/b"}, {".."}, {"x@y"}, {"a", "b", "a"}} {
		if err := checkNames(names); err == nil {
			t.Errorf("checkNames(%q) accepted", names)
		}
	}
	if err := checkNames([]string{"podsync-1", "podsync-2"}); err != nil {
		t.Error(err)
	}
}

func TestManyClusters(t *testing.T) {
	bin := toolsBin(t)
	names := []string{"podsync-1", "podsync-2", "podsync-3"}
	began := time.Now()
	clusters, err := StartMany(t.Context(), Options{BinDir: bin, Dir: t.TempDir(), Nodes: 1, Log: testLog{t}}, names)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("3 clusters ready in %s", time.Since(began).Round(100*time.Millisecond))
	t.Cleanup(func() {
		if err := StopAll(clusters); err != nil {
			t.Error(err)
		}
	})
	byName := map[string]*Cluster{}
	for i, c := range clusters {
		byName[names[i]] = c
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteMergedKubeconfig(kc, byName); err != nil {
		t.Fatal(err)
	}
	checkMergedKubeconfig(t, kc, clusters, names)

	as := func(context string, args ...string) (string, error) {
		return kubectl(t.Context(), bin, kc, "", append([]string{"--context", context}, args...)...)
	}
	// A pod made through each cluster's own kubeconfig is seen through its
	// context in the merged one, and through no other.
	for i, c := range clusters {
		if _, err := kubectl(t.Context(), bin, c.Kubeconfig, "", "run", "only-in-"+names[i], "--image=busybox:1.36"); err != nil {
			t.Fatal(err)
		}
	}
	for _, ctx := range names {
		out, err := as(ctx, "get", "pods", "-o", "name")
		if err != nil {
			t.Fatal(err)
		}
		if want := "pod/only-in-" + ctx + "\n"; out != want {
			t.Errorf("context %s sees %q, want %q", ctx, out, want)
		}
	}
	out, err := as(UserContext("podsync-2", RestrictedContext), "get", "pods")
	if err == nil || !strings.Contains(out, `User "podsync-restricted" cannot list resource "pods"`) {
		t.Errorf("restricted context of podsync-2: want Forbidden, got %v:\n%s", err, out)
	}

	serving := func(want map[string]bool) {
		t.Helper()
		for _, ctx := range names {
			_, err := as(ctx, "get", "nodes", "--request-timeout=10s")
			if (err == nil) != want[ctx] {
				t.Errorf("context %s answers: %v, want %v (%v)", ctx, err == nil, want[ctx], err)
			}
		}
	}
	if err := clusters[1].Kill(APIServer); err != nil {
		t.Fatal(err)
	}
	serving(map[string]bool{"podsync-1": true, "podsync-3": true})
	if err := clusters[1].Restart(APIServer); err != nil {
		t.Fatal(err)
	}
	serving(map[string]bool{"podsync-1": true, "podsync-2": true, "podsync-3": true})

	if err := clusters[2].Stop(); err != nil {
		t.Fatal(err)
	}
	if pids := clusters[2].PIDs(); len(pids) > 0 {
		t.Errorf("podsync-3 still runs %v after Stop", pids)
	}
	serving(map[string]bool{"podsync-1": true, "podsync-2": true})
	for _, c := range clusters[:2] {
		if pids := c.PIDs(); len(pids) != 5 {
			t.Errorf("cluster in %s runs %v after another's Stop, want 5 components", c.Dir, pids)
		}
	}
}

// checkMergedKubeconfig checks the contexts of a merged kubeconfig and that
// each cluster entry trusts its own server only.
func checkMergedKubeconfig(t *testing.T, kc string, clusters []*Cluster, names []string) {
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != names[0] {
		t.Errorf("current context %q, want %q", cfg.CurrentContext, names[0])
	}
	var matched []string
	for name := range cfg.Contexts {
		if ok, _ := path.Match("podsync-*", name); ok {
			matched = append(matched, name)
		}
	}
	slices.Sort(matched)
	if !slices.Equal(matched, names) {
		t.Errorf("contexts matching podsync-*: %v, want %v", matched, names)
	}
	for _, name := range names {
		for _, user := range []string{RestrictedContext, NoPodLogsContext, NoEventsContext} {
			if ctx, ok := cfg.Contexts[UserContext(name, user)]; !ok || ctx.Cluster != name {
				t.Errorf("context %s missing or not on cluster %s: %+v", UserContext(name, user), name, ctx)
			}
		}
	}
	if len(cfg.Contexts) != 4*len(names) || len(cfg.AuthInfos) != 4*len(names) || len(cfg.Clusters) != len(names) {
		t.Errorf("%d contexts, %d users, %d clusters; want %d, %d, %d", len(cfg.Contexts), len(cfg.AuthInfos), len(cfg.Clusters), 4*len(names), 4*len(names), len(names))
	}
	for i, name := range names {
		ctx := cfg.Contexts[name]
		entry := cfg.Clusters[ctx.Cluster]
		if entry.Server != clusters[i].Server {
			t.Errorf("context %s: server %s, want %s", name, entry.Server, clusters[i].Server)
		}
		if ctx.Namespace != "default" {
			t.Errorf("context %s: namespace %q, want default", name, ctx.Namespace)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(entry.CertificateAuthorityData) {
			t.Fatalf("context %s: no CA data", name)
		}
		for j, other := range clusters {
			err := handshake(t, other.Server, pool)
			var unknown x509.UnknownAuthorityError
			switch {
			case i == j && err != nil:
				t.Errorf("CA of %s does not verify its own server: %v", name, err)
			case i != j && !errors.As(err, &unknown):
				t.Errorf("CA of %s verifies the server of %s: %v", name, names[j], err)
			}
		}
	}
}

func handshake(t *testing.T, server string, roots *x509.CertPool) error {
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: roots})
	if err != nil {
		return err
	}
	return conn.Close()
}
