package faults

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// cutProxy forwards TCP to the API server; TLS passes through, so clients
// see the real server. Cut drops every connection and refuses new ones, as
// a network outage would; Restore opens the same address again.
type cutProxy struct {
	t      testing.TB
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
}

func newCutProxy(t testing.TB, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{t: t, target: target, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	t.Cleanup(p.Cut)
	return p
}

// URL is the proxy's address as an https server URL.
func (p *cutProxy) URL() string { return "https://" + p.addr }

func (p *cutProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

func (p *cutProxy) forward(client net.Conn) {
	server, err := net.DialTimeout("tcp", p.target, 10*time.Second)
	if err != nil {
		_ = client.Close()
		return
	}
	if !p.track(client, server) {
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	p.untrack(client, server)
}

// track records a connection pair, or closes it when the proxy is cut.
func (p *cutProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *cutProxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
		delete(p.conns, c)
	}
}

// Cut closes the listener and every open connection.
func (p *cutProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
		delete(p.conns, c)
	}
}

// Restore listens on the proxy's address again.
func (p *cutProxy) Restore() {
	p.t.Helper()
	var ln net.Listener
	var err error
	for range 50 {
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			p.serve(ln)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.t.Fatalf("listen on %s again: %v", p.addr, err)
}

// expiryProxy is a TLS reverse proxy in front of the API server that
// removes timeoutSeconds from watch requests, so the server's own
// --min-request-timeout decides when each watch ends. (client-go's
// reflector asks for 5-10 minute watches, which the server would
// otherwise honour.) It authenticates upstream as the admin and counts
// the list and watch requests for pods it forwards.
type expiryProxy struct {
	srv            *httptest.Server
	lists, watches atomic.Int32
	// relists counts list requests after the first watch: the initial
	// list may take more than one request, a relist comes after a watch.
	relists atomic.Int32
}

func newExpiryProxy(t testing.TB, admin *rest.Config) *expiryProxy {
	t.Helper()
	p := &expiryProxy{}
	p.srv = startTLS(t, adminProxy(t, admin, func(r *httputil.ProxyRequest) {
		q := r.In.URL.Query()
		if !strings.HasSuffix(r.In.URL.Path, "/pods") {
			return
		}
		if w := q.Get("watch"); w == "true" || w == "1" {
			p.watches.Add(1)
			q.Del("timeoutSeconds")
			r.Out.URL.RawQuery = q.Encode()
			return
		}
		p.lists.Add(1)
		if p.watches.Load() > 0 {
			p.relists.Add(1)
		}
	}))
	return p
}

// adminProxy is a reverse proxy to the API server that authenticates
// upstream as the admin; rewrite, if set, may change each request after
// it is pointed upstream.
func adminProxy(t testing.TB, admin *rest.Config, rewrite func(*httputil.ProxyRequest)) *httputil.ReverseProxy {
	t.Helper()
	upstream, err := url.Parse(admin.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(admin)
	if err != nil {
		t.Fatal(err)
	}
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			if rewrite != nil {
				rewrite(r)
			}
		},
		Transport:     transport,
		FlushInterval: -1,
	}
}

// startTLS serves h over HTTPS (HTTP/2 too) until the test ends.
func startTLS(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// caPEM is the proxy's self-signed serving certificate, for a kubeconfig.
func (p *expiryProxy) caPEM() []byte { return certPEM(p.srv.Certificate().Raw) }

// countingServer answers every request with 503 and counts them, to prove
// that bad input is refused before any request.
type countingServer struct {
	srv      *httptest.Server
	requests atomic.Int32
}

func newCountingServer(t testing.TB) *countingServer {
	t.Helper()
	c := &countingServer{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		c.requests.Add(1)
		http.Error(w, "not a cluster", http.StatusServiceUnavailable)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// silentServer accepts TCP connections and never answers, like a server
// behind a black-holing network path.
func silentServer(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	return "https://" + ln.Addr().String()
}

// closedPort is a loopback address where nothing listens.
func closedPort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Fatal(err)
	}
	return "https://" + addr
}
