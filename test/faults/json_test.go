package faults

import (
	"bytes"
	"context"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// jsonProxy is a TLS reverse proxy in front of the API server that keeps
// only the JSON alternatives of each request's Accept header, as a proxy
// or server that speaks no protobuf would: the server then answers every
// request in JSON. It records each media type the server answered with.
type jsonProxy struct {
	srv *httptest.Server

	mu      sync.Mutex
	answers map[string]int // media type of each answer
}

func newJSONProxy(t testing.TB, tc *testCluster) *jsonProxy {
	t.Helper()
	admin, err := tc.Cluster.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	p := &jsonProxy{answers: map[string]int{}}
	proxy := adminProxy(t, admin, func(r *httputil.ProxyRequest) {
		r.Out.Header.Del("Authorization") // the proxy's own credentials go upstream
		if accept := jsonAlternatives(r.In.Header.Get("Accept")); accept != "" {
			r.Out.Header.Set("Accept", accept)
		} else {
			r.Out.Header.Del("Accept")
		}
	})
	proxy.ModifyResponse = func(resp *http.Response) error {
		mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		p.mu.Lock()
		p.answers[mediaType]++
		p.mu.Unlock()
		return nil
	}
	p.srv = startTLS(t, proxy)
	return p
}

// jsonAlternatives is an Accept header without its alternatives that are
// not JSON.
func jsonAlternatives(accept string) string {
	var keep []string
	for _, alt := range strings.Split(accept, ",") {
		if mediaType, _, err := mime.ParseMediaType(strings.TrimSpace(alt)); err == nil && mediaType == "application/json" {
			keep = append(keep, strings.TrimSpace(alt))
		}
	}
	return strings.Join(keep, ",")
}

func (p *jsonProxy) kubeconfig(t testing.TB, ns string) string {
	t.Helper()
	// A token, so that kubectl does not ask for a user name; the proxy
	// authenticates upstream as the admin.
	return writeKubeconfig(t, p.srv.URL, certPEM(p.srv.Certificate().Raw), &clientcmdapi.AuthInfo{Token: "to-the-proxy"}, ns)
}

// notJSON lists the media types other than JSON the server answered with.
func (p *jsonProxy) notJSON() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for mediaType := range p.answers {
		if mediaType != "application/json" && mediaType != "" {
			out = append(out, mediaType)
		}
	}
	return out
}

// Behind a proxy that lets only JSON through, podsync prints what it
// prints against the server itself, in every output and by every path its
// pods take (a list of lean rows and cells, a list or a streaming list of
// packed rows, whole pods, watches), and so does kubectl get. A stream
// prints every change and says nothing about its connection.
func TestJSONOnlyServer(t *testing.T) {
	tc := sharedCluster(t)
	ns := tc.Namespace(t)
	createPod(t, tc.cs, ns, newPod("p0", true, map[string]string{"app": "web"}))
	createPod(t, tc.cs, ns, newPod("p1", true, nil))
	p := newJSONProxy(t, tc)
	viaProxy := []string{"KUBECONFIG=" + p.kubeconfig(t, ns)}
	var direct []string // the cluster's own kubeconfig
	runs := []struct {
		args  []string
		table bool
	}{
		{[]string{"--once", "-n", ns}, true},
		{[]string{"--once", "-n", ns, "-o", "wide", "--show-labels"}, true},
		{[]string{"--once", "-n", ns, "-o", "json"}, false},
		{[]string{"--once", "-n", ns, "-o", "yaml", "--request-timeout=30s"}, false},
		{[]string{"--once", "-n", ns, "-o", "json", "--sort-by", "{.metadata.name}"}, false},
		{[]string{"--once", "-n", ns, "-o", "name"}, false},
		{[]string{"--once", "-n", ns, "--until", "condition=PodScheduled=False"}, true},
	}
	for _, run := range runs {
		want := tc.PodsyncEnv(t, time.Minute, direct, run.args...)
		got := tc.PodsyncEnv(t, time.Minute, viaProxy, run.args...)
		if want.Code != 0 || want.Stdout == "" {
			t.Fatalf("%s against the server itself: %s", strings.Join(run.args, " "), want)
		}
		if run.table {
			// AGE ticks from one run to the next.
			got.Stdout, want.Stdout = tableWithoutAge(t, got.Stdout), tableWithoutAge(t, want.Stdout)
		}
		if got.Code != want.Code || got.Stdout != want.Stdout || stripTook(got.Stderr) != stripTook(want.Stderr) {
			t.Errorf("%s: through the JSON proxy:\n%s\nagainst the server itself:\n%s", strings.Join(run.args, " "), got, want)
		}
	}
	kubectlGet := func(env []string) string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := tc.Command(ctx, env, "get", "pods", "-n", ns, "-o", "wide")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kubectl get pods: %v\n%s%s", err, out, stderr.String())
		}
		return string(out)
	}
	if got, want := tableWithoutAge(t, kubectlGet(viaProxy)), tableWithoutAge(t, kubectlGet(direct)); got != want {
		t.Errorf("kubectl get pods through the JSON proxy:\n%s\nagainst the server itself:\n%s", got, want)
	}

	// Streams: the table and -o json, each through the proxy and not.
	type pair struct{ proxied, plain *harness.Stream }
	streams := map[string]pair{}
	for name, args := range map[string][]string{"table": {"-n", ns, "-L", counterKey}, "json": {"-n", ns, "-o", "json"}} {
		streams[name] = pair{tc.StartEnv(t, viaProxy, args...), tc.StartEnv(t, direct, args...)}
	}
	// step makes a change and waits until every stream has printed the
	// message it causes.
	step := func(event, pod string, change func() error) {
		t.Helper()
		if err := change(); err != nil {
			t.Fatal(err)
		}
		patterns := map[string]string{
			"table": `^` + event + `\s+` + pod + `\s`,
			"json":  `^\{"type":"` + event + `","object":\{.*"name":"` + pod + `"`,
		}
		for name, s := range streams {
			for _, st := range []*harness.Stream{s.proxied, s.plain} {
				st.WaitLine(patterns[name], time.Minute)
				alive(t, st)
			}
		}
	}
	ctx := context.Background()
	step("SYNC", "p1", func() error { return nil })
	step("ADD", "p2", func() error { createPod(t, tc.cs, ns, newPod("p2", true, nil)); return nil })
	step("UPDATE", "p0", func() error { _, err := setCounter(ctx, tc.cs, ns, "p0", 1); return err })
	step("GONE", "p1", func() error { harness.DeleteNow(t, tc.cs, ns, "p1"); return nil })
	for name, s := range streams {
		got, want := s.proxied.Stop(syscall.SIGINT), s.plain.Stop(syscall.SIGINT)
		if name == "table" {
			// The AGE of a new pod may tick between two streams.
			got.Stdout, want.Stdout = tableWithoutAge(t, got.Stdout), tableWithoutAge(t, want.Stdout)
		} else {
			got.Stdout, want.Stdout = jsonWithoutTerminating(got.Stdout), jsonWithoutTerminating(want.Stdout)
		}
		if got.Stdout != want.Stdout {
			t.Errorf("%s stream through the JSON proxy:\n%s\nagainst the server itself:\n%s", name, got, want)
		}
		if lost, back := connectionNotes(got.Stderr); lost != 0 || back != 0 {
			t.Errorf("%s stream through the JSON proxy spoke of its connection:\n%s", name, got)
		}
	}
	if others := p.notJSON(); len(others) > 0 {
		t.Errorf("the proxy let answers through as %v", others)
	}
}

var tookText = regexp.MustCompile(`\d+(\.\d+)?(ms|s)\b`)

// stripTook blanks durations out of a summary.
func stripTook(s string) string { return tookText.ReplaceAllString(s, "T") }

// tableWithoutAge is a table's text without its AGE column, and
// without the UPDATE that may announce a deletion: whether one comes
// before GONE depends on when a worker takes the pod. Text that is no
// table is left as it is.
func tableWithoutAge(t testing.TB, text string) string {
	t.Helper()
	table, err := harness.ParseTable(text)
	if err != nil {
		t.Logf("not a table: %v", err)
		return text
	}
	table = table.Without("AGE")
	status := table.Column("STATUS")
	var b strings.Builder
	for _, row := range append([][]string{table.Header}, table.Rows...) {
		if row[0] == "UPDATE" && row[status] == "Terminating" {
			continue
		}
		b.WriteString(strings.Join(row, " ") + "\n")
	}
	return b.String()
}

// jsonWithoutTerminating drops the UPDATE lines that announce a deletion.
func jsonWithoutTerminating(text string) string {
	lines := strings.SplitAfter(text, "\n")
	return strings.Join(slices.DeleteFunc(lines, func(l string) bool {
		return strings.HasPrefix(l, `{"type":"UPDATE"`) && strings.Contains(l, `"deletionTimestamp"`)
	}), "")
}
