package faults

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// logFault is what the proxy does with the n-th pods/log request (from
// 1): forward it (status 0), or answer status itself, with Retry-After
// when retryAfter is set.
type logFault func(n int) (status int, retryAfter string)

// failFirst fails the first k requests with status.
func failFirst(k, status int, retryAfter string) logFault {
	return func(n int) (int, string) {
		if n <= k {
			return status, retryAfter
		}
		return 0, ""
	}
}

// logFaultProxy is a TLS reverse proxy in front of the API server that
// authenticates upstream as the admin, forwards every request, and makes
// pods/log requests fail as its logFault says, as an overloaded API
// server or an unreachable kubelet would. It records when each pods/log
// request came.
type logFaultProxy struct {
	srv   *httptest.Server
	fault logFault

	mu   sync.Mutex
	logs []time.Time
}

func newLogFaultProxy(t testing.TB, admin *rest.Config, fault logFault) *logFaultProxy {
	t.Helper()
	p := &logFaultProxy{fault: fault}
	rp := adminProxy(t, admin, nil)
	p.srv = startTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/log") {
			rp.ServeHTTP(w, r)
			return
		}
		status, retryAfter := p.fault(p.record())
		if status == 0 {
			rp.ServeHTTP(w, r)
			return
		}
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		http.Error(w, "injected by the test proxy", status)
	}))
	return p
}

// record notes a pods/log request and returns its number.
func (p *logFaultProxy) record() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.logs = append(p.logs, time.Now())
	return len(p.logs)
}

// logRequests returns when each pods/log request came.
func (p *logFaultProxy) logRequests() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.logs...)
}

// gaps are the times between consecutive pods/log requests.
func (p *logFaultProxy) gaps() []time.Duration {
	at := p.logRequests()
	var out []time.Duration
	for i := 1; i < len(at); i++ {
		out = append(out, at[i].Sub(at[i-1]).Round(10*time.Millisecond))
	}
	return out
}

func (p *logFaultProxy) caPEM() []byte { return certPEM(p.srv.Certificate().Raw) }
