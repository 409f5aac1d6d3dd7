package cmd

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// With no kubeconfig and no --server there is nowhere to connect: exit 2,
// instead of client-go's silent fallback to http://localhost:8080. With
// --server alone, podsync connects there.
func TestNoClusterIsUsageError(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	t.Setenv("KUBECONFIG", missing)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	code := Execute(context.Background(), streams, []string{"--once"})
	want := "error: kubeconfig: no cluster configured: no kubeconfig with a cluster at KUBECONFIG=" + missing
	if code != 2 || out.Len() != 0 || !strings.HasPrefix(errOut.String(), want) || strings.Count(errOut.String(), "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and one line starting %q", code, out, errOut, want)
	}

	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.Error(w, "not a cluster", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	streams, _, _, errOut = genericiooptions.NewTestIOStreams()
	code = Execute(context.Background(), streams, []string{"--once", "--server", srv.URL})
	if code != 1 || requests.Load() == 0 {
		t.Errorf("--server without a kubeconfig: exit %d after %d requests (%q), want exit 1 from the server's 503", code, requests.Load(), errOut)
	}
}

// -1 is the "not given" value of --min-pods and --max-restarts inside;
// typed by the user it is a negative number like any other.
func TestMinusOneCountsAreUsageErrors(t *testing.T) {
	kubeconfig, requests := countingServer(t)
	for _, args := range [][]string{
		{"--until", "ready", "--min-pods=-1"},
		{"--until", "ready", "--max-restarts", "-1"},
	} {
		code, stdout, stderr := run(t, kubeconfig, args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "must be 0 or more") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 saying must be 0 or more", args, code, stdout, stderr)
		}
	}
	if requests.Load() != 0 {
		t.Errorf("%d requests reached the server", requests.Load())
	}
}
