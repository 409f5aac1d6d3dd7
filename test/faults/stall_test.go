package faults

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// startup is what a whole command may take to start and end on a loaded
// machine, beyond the deadline under test: the list's silence is counted
// from its first answer, which no clock of the test sees.
const startup = 5 * time.Second

// stallProxy forwards every request to the API server as the admin, but
// of a list of pods (a plain list or a streaming one) it sends the
// headers only, then nothing until the client goes away: a server or a
// proxy that stalls after answering. It returns the proxy's kubeconfig.
func stallProxy(t *testing.T, admin *rest.Config, ns string) string {
	t.Helper()
	rp := adminProxy(t, admin, nil)
	rp.ModifyResponse = func(resp *http.Response) error {
		if listsPods(resp.Request) {
			resp.Body = &stalled{ctx: resp.Request.Context(), body: resp.Body}
		}
		return nil
	}
	srv := startTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rp.ServeHTTP(&headersFirst{ResponseWriter: w}, r)
	}))
	return writeKubeconfig(t, srv.URL, certPEM(srv.Certificate().Raw), &clientcmdapi.AuthInfo{}, ns)
}

// listsPods: the request lists pods, plainly or as a streaming list.
func listsPods(r *http.Request) bool {
	if !strings.HasSuffix(r.URL.Path, "/pods") {
		return false
	}
	q := r.URL.Query()
	watch := q.Get("watch") == "true" || q.Get("watch") == "1"
	return !watch || q.Get("sendInitialEvents") == "true"
}

// stalled is a body that sends nothing until ctx ends.
type stalled struct {
	ctx  context.Context
	body io.ReadCloser
}

func (s *stalled) Read([]byte) (int, error) {
	<-s.ctx.Done()
	return 0, s.ctx.Err()
}

func (s *stalled) Close() error { return s.body.Close() }

// headersFirst sends the headers as soon as they are written, before any
// of the body.
type headersFirst struct{ http.ResponseWriter }

func (h *headersFirst) WriteHeader(code int) {
	h.ResponseWriter.WriteHeader(code)
	_ = http.NewResponseController(h.ResponseWriter).Flush()
}

func (h *headersFirst) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// A server that answers the initial list's headers and then sends
// nothing: without --request-timeout, after 30s of silence the run says
// that the initial list never completed and exits 1, as for a cluster
// that cannot be used at start (a plain list for the table, a streaming
// list for JSON). With --timeout shorter than that, the summary says the
// list was not complete yet, not that no pod matched.
func TestInitialListStalls(t *testing.T) {
	tc := sharedCluster(t)
	ns := tc.Namespace(t)
	admin, err := tc.Cluster.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	createPod(t, tc.cs, ns, newPod("web", true, map[string]string{"app": "web"}))
	kubeconfig := stallProxy(t, admin, ns)
	env := []string{"KUBECONFIG=" + kubeconfig}

	// The two 30-second runs side by side.
	var runs []*harness.Stream
	for _, args := range [][]string{{"-l", "app=web", "--once"}, {"-l", "app=web", "--once", "-o", "json"}} {
		runs = append(runs, tc.StartEnv(t, env, args...))
	}
	r := tc.PodsyncEnv(t, time.Minute, env, "-l", "app=web", "--until", "ready", "--timeout", "5s")
	if r.Code != 3 || !strings.Contains(r.Stderr, "Reason:   the initial list of pods was not complete yet\n") {
		t.Errorf("exit %d, want 3 saying the list was not complete yet\n%s", r.Code, r)
	}
	want := regexp.MustCompile(`^error: list pods: the initial list never completed: nothing arrived for 30s from the API server at https://127\.0\.0\.1:\d+\n$`)
	for i, s := range runs {
		r := s.Wait(30*time.Second + endWithin + startup + 30*time.Second)
		if r.Code != 1 || !want.MatchString(r.Stderr) {
			t.Errorf("run %d: exit %d, want 1 with one line saying the list never completed\n%s", i, r.Code, r)
		}
		if r.Stdout != "" {
			t.Errorf("run %d printed on stdout\n%s", i, r)
		}
		if r.Took > 30*time.Second+endWithin+startup {
			t.Errorf("run %d took %s, want within %s of 30s", i, r.Took, endWithin)
		}
	}
}
