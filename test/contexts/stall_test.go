package contexts

import (
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// startup is what a whole command may take to start and end on a loaded
// machine, beyond the deadline under test: the list's silence is counted
// from its first answer, which no clock of the test sees.
const startup = 5 * time.Second

// stalledContext is the context whose initial list of pods stalls.
const stalledContext = "stalled"

// stalledKubeconfig is the test kubeconfig with one more context,
// stalledContext: podsync-2's API server behind a proxy that, of a list
// of pods, sends the headers only, then nothing until the client goes
// away.
func stalledKubeconfig(t *testing.T) string {
	t.Helper()
	admin, err := env.Clusters[1].RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	upstream, err := url.Parse(admin.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(admin)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(upstream) },
		Transport:     transport,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if strings.HasSuffix(resp.Request.URL.Path, "/pods") && resp.Request.URL.Query().Get("watch") == "" {
				resp.Body = &stalledBody{ctx: resp.Request.Context(), body: resp.Body}
			}
			return nil
		},
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rp.ServeHTTP(&headersFirst{ResponseWriter: w}, r)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)

	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clusters[stalledContext] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: certPEM(srv.Certificate().Raw)}
	cfg.AuthInfos[stalledContext] = &clientcmdapi.AuthInfo{}
	cfg.Contexts[stalledContext] = &clientcmdapi.Context{Cluster: stalledContext, AuthInfo: stalledContext}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// stalledBody sends nothing until ctx ends.
type stalledBody struct {
	ctx  context.Context
	body io.ReadCloser
}

func (s *stalledBody) Read([]byte) (int, error) {
	<-s.ctx.Done()
	return 0, s.ctx.Err()
}

func (s *stalledBody) Close() error { return s.body.Close() }

// headersFirst sends the headers as soon as they are written.
type headersFirst struct{ http.ResponseWriter }

func (h *headersFirst) WriteHeader(code int) {
	h.ResponseWriter.WriteHeader(code)
	_ = http.NewResponseController(h.ResponseWriter).Flush()
}

func (h *headersFirst) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// A context whose initial list stalls after its headers is unusable once
// nothing has arrived for 30s (no --request-timeout): exit 1 naming it,
// or, with --skip-unavailable, the run goes on without it and a check
// counts it as failed.
func TestInitialListStallsInOneContext(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	readyPodEverywhere(t, ns, "web")
	kubeconfig := []string{"KUBECONFIG=" + stalledKubeconfig(t)}
	args := []string{"--context", "podsync-1," + stalledContext, "-n", ns, "-l", "app=web"}
	once := env.StartEnv(t, kubeconfig, append(args, "--once")...)
	skip := env.StartEnv(t, kubeconfig, append(args, "--until", "ready", "--timeout", "2m", "--skip-unavailable")...)
	never := `context stalled: list pods: the initial list never completed: nothing arrived for 30s from the API server at https://127\.0\.0\.1:\d+`

	r := once.Wait(2 * time.Minute)
	wantExit(t, r, 1)
	if !regexp.MustCompile(`^error: ` + never + `\n$`).MatchString(r.Stderr) {
		t.Errorf("stderr does not name the context in one error line\n%s", r)
	}
	if r.Took > 30*time.Second+time.Second+startup {
		t.Errorf("took %s, want within a second of 30s", r.Took)
	}

	r = skip.Wait(2 * time.Minute)
	wantExit(t, r, 4)
	warning := strings.Replace(never, "context stalled: ", `context stalled: unavailable, going on without it \(--skip-unavailable\): `, 1)
	if !regexp.MustCompile(`(?m)^warning: ` + warning + `$`).MatchString(r.Stderr) {
		t.Errorf("stderr does not say the skip, naming the context\n%s", r)
	}
	wantStderr(t, r, "Verdict:  failed (exit 4)", "Reason:   context stalled: unavailable: list pods: the initial list never completed")
}

func certPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
