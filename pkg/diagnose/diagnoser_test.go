package diagnose

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/diagnosis"
)

var now = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

// fakeAPI serves pods/log and events like an API server would, with
// answers a test sets per request kind, and counts the requests.
type fakeAPI struct {
	mu       sync.Mutex
	logs     []string // requests, as "previous=…&tailLines=…"
	events   int
	logReply func(n int, w http.ResponseWriter, r *http.Request)
	evReply  func(n int, w http.ResponseWriter)
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case strings.HasSuffix(r.URL.Path, "/log"):
		f.logs = append(f.logs, r.URL.RawQuery)
		f.logReply(len(f.logs), w, r)
	case strings.HasSuffix(r.URL.Path, "/events"):
		f.events++
		f.evReply(f.events, w)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeAPI) counts() (int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.logs), f.events
}

func serveLog(text string) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte(text))
	}
}

func serveEvents(events ...corev1.Event) func(int, http.ResponseWriter) {
	return func(_ int, w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&corev1.EventList{TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "v1"}, Items: events})
	}
}

// status writes a Kubernetes Status error, as the API server does.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg})
}

func newDiagnoser(t *testing.T, api *fakeAPI, lines int, warn *bytes.Buffer) *Diagnoser {
	t.Helper()
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return New(Options{Client: cs, LogLines: lines, Warn: warn, Now: func() time.Time { return now }, AttemptTime: 500 * time.Millisecond})
}

var backOffEvent = corev1.Event{Type: "Warning", Reason: "BackOff", Message: "Back-off restarting failed container", Count: 2,
	LastTimestamp: metav1.NewTime(now.Add(-3 * time.Second))}

func TestDiagnoseCrashLoop(t *testing.T) {
	api := &fakeAPI{logReply: serveLog("one\ntwo\nthree\n"), evReply: serveEvents(backOffEvent)}
	d := newDiagnoser(t, api, 2, nil)
	pod := testPod(status(backOff(1)))
	got, err := d.Diagnose(context.Background(), "shop/web-1", pod)
	if err != nil || got == nil {
		t.Fatalf("Diagnose = %v, %v", got, err)
	}
	if api.logs[0] != "container=app&previous=true&tailLines=2" {
		t.Errorf("log request query = %q", api.logs[0])
	}
	want := []string{"two", "three"}
	if l := got.Log("app"); l == nil || !l.Previous || strings.Join(l.Lines, ",") != strings.Join(want, ",") {
		t.Errorf("log = %+v, want previous %v", l, want)
	}
	if len(got.Events) != 1 || got.Events[0].Reason != "BackOff" || got.Events[0].Age != "3s" {
		t.Errorf("events = %+v", got.Events)
	}
	if got.Reason != "CrashLoopBackOff" || got.Kind != diagnosis.Kind || got.Key() != "shop/web-1" || len(got.Missing) != 0 {
		t.Errorf("diagnosis = %+v", got)
	}
	// The same crash again: nothing to do, no request.
	again, err := d.Diagnose(context.Background(), "shop/web-1", testPod(status(backOff(1))))
	if again != nil || err != nil {
		t.Errorf("second Diagnose of the same crash = %v, %v", again, err)
	}
	if l, e := api.counts(); l != 1 || e != 1 {
		t.Errorf("%d log and %d events requests, want 1 and 1", l, e)
	}
	// The next crash is diagnosed again; a pod no longer failing is not.
	if next, _ := d.Diagnose(context.Background(), "shop/web-1", testPod(status(crashed(1)))); next == nil || next.Log("app").Previous {
		t.Errorf("next crash: %+v", next)
	}
	if ok, err := d.Diagnose(context.Background(), "shop/web-1", testPod()); ok != nil || err != nil {
		t.Errorf("healthy pod: %v, %v", ok, err)
	}
}

// 503 twice, then the log: each failed attempt returns a RetryError and
// keeps the events already read, so only the log is asked again.
func TestDiagnoseRetriesWhatFailed(t *testing.T) {
	api := &fakeAPI{evReply: serveEvents(backOffEvent), logReply: func(n int, w http.ResponseWriter, r *http.Request) {
		if n <= 2 {
			http.Error(w, "upstream busy", http.StatusServiceUnavailable)
			return
		}
		serveLog("crashed\n")(n, w, r)
	}}
	d := newDiagnoser(t, api, 10, nil)
	pod := testPod(status(backOff(1)))
	for i := 1; i <= 2; i++ {
		got, err := d.Diagnose(context.Background(), "shop/web-1", pod)
		var re *RetryError
		if got != nil || !errors.As(err, &re) || !Retriable(err) {
			t.Fatalf("attempt %d: %v, %v; want a RetryError", i, got, err)
		}
		if !strings.Contains(err.Error(), `diagnosis: log of container "app"`) {
			t.Errorf("attempt %d error = %v", i, err)
		}
	}
	got, err := d.Diagnose(context.Background(), "shop/web-1", pod)
	if err != nil || got == nil || got.Log("app").Lines[0] != "crashed" || len(got.Events) != 1 {
		t.Fatalf("third attempt = %+v, %v", got, err)
	}
	if l, e := api.counts(); l != 3 || e != 1 {
		t.Errorf("%d log and %d events requests, want 3 and 1", l, e)
	}
}

// 429 with Retry-After, as the API server's priority and fairness sends
// it (plain text and a header) or as a Status with retryAfterSeconds.
func TestDiagnoseRetryAfter(t *testing.T) {
	replies := map[string]func(w http.ResponseWriter){
		"text": func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "3")
			http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
		},
		"status": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status: metav1.StatusFailure, Code: 429, Reason: metav1.StatusReasonTooManyRequests, Message: "slow down",
				Details: &metav1.StatusDetails{RetryAfterSeconds: 3}})
		},
	}
	for name, reply := range replies {
		api := &fakeAPI{evReply: serveEvents(), logReply: func(_ int, w http.ResponseWriter, _ *http.Request) { reply(w) }}
		d := newDiagnoser(t, api, 10, nil)
		_, err := d.Diagnose(context.Background(), "shop/web-1", testPod(status(backOff(1))))
		var re *RetryError
		if !errors.As(err, &re) || re.RetryAfter() != 3*time.Second {
			t.Errorf("%s: err = %v, want a RetryError after 3s", name, err)
		}
		// client-go did not wait and retry by itself.
		if l, _ := api.counts(); l != 1 {
			t.Errorf("%s: %d log requests, want 1", name, l)
		}
	}
}

// A 403 is final: said once for the resource, the diagnosis completes
// without the log, and other pods of the namespace are not asked again.
func TestDiagnoseForbiddenOnce(t *testing.T) {
	api := &fakeAPI{evReply: serveEvents(backOffEvent), logReply: func(_ int, w http.ResponseWriter, _ *http.Request) {
		writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, `pods "web-1" is forbidden: User "u" cannot get resource "pods/log"`)
	}}
	var warn bytes.Buffer
	d := newDiagnoser(t, api, 10, &warn)
	for _, name := range []string{"web-1", "web-2"} {
		pod := testPod(status(backOff(1)), func(p *corev1.Pod) { p.Name, p.UID = name, types.UID("uid-"+name) })
		got, err := d.Diagnose(context.Background(), "shop/"+name, pod)
		if err != nil || got == nil {
			t.Fatalf("%s: %v, %v", name, got, err)
		}
		if l := got.Log("app"); l == nil || !strings.Contains(l.Error, "forbidden") || len(got.Events) != 1 {
			t.Errorf("%s: diagnosis = %+v", name, got)
		}
	}
	if l, _ := api.counts(); l != 1 {
		t.Errorf("%d log requests, want 1", l)
	}
	if n := strings.Count(warn.String(), "\n"); n != 1 || !strings.HasPrefix(warn.String(), "warning: cannot read pods/log: pods \"web-1\" is forbidden") {
		t.Errorf("warnings = %q, want one line", warn.String())
	}
}

func TestDiagnoseGiveUp(t *testing.T) {
	api := &fakeAPI{evReply: serveEvents(backOffEvent), logReply: func(_ int, w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}}
	d := newDiagnoser(t, api, 10, nil)
	_, err := d.Diagnose(context.Background(), "shop/web-1", testPod(status(backOff(1))))
	if err == nil {
		t.Fatal("no error")
	}
	got := d.GiveUp("shop/web-1", errors.New("gave up after 5 failed attempts: down"))
	if got == nil || got.Log("app").Error != "gave up after 5 failed attempts: down" || len(got.Events) != 1 {
		t.Fatalf("GiveUp = %+v", got)
	}
	if d.GiveUp("shop/web-1", err) != nil {
		t.Error("a second GiveUp returned a diagnosis")
	}
	// Given up is done: the same crash is not fetched again.
	if again, err := d.Diagnose(context.Background(), "shop/web-1", testPod(status(backOff(1)))); again != nil || err != nil {
		t.Errorf("after GiveUp: %v, %v", again, err)
	}
}

// A read that hangs ends with the attempt, as one that may pass.
func TestDiagnoseAttemptTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	api := &fakeAPI{evReply: serveEvents()}
	api.logReply = func(_ int, _ http.ResponseWriter, r *http.Request) {
		api.mu.Unlock()
		defer api.mu.Lock()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
	d := newDiagnoser(t, api, 10, nil)
	start := time.Now()
	_, err := d.Diagnose(context.Background(), "shop/web-1", testPod(status(backOff(1))))
	if took := time.Since(start); !Retriable(err) || took > 2*time.Second {
		t.Errorf("Diagnose = %v after %s, want a retriable error after the attempt time", err, took)
	}
}

// --log-lines 0: no log request, events only; a container that never ran
// has no log to ask for.
func TestDiagnoseNoLogs(t *testing.T) {
	api := &fakeAPI{evReply: serveEvents(backOffEvent), logReply: serveLog("x")}
	d := newDiagnoser(t, api, 0, nil)
	got, err := d.Diagnose(context.Background(), "shop/web-1", testPod(status(backOff(1))))
	if err != nil || got == nil || got.Log("app") != nil {
		t.Fatalf("Diagnose = %+v, %v", got, err)
	}
	d = newDiagnoser(t, api, 10, nil)
	got, _ = d.Diagnose(context.Background(), "shop/web-1", testPod(status(waitingFor("ErrImagePull"))))
	if got == nil || got.Log("app") != nil {
		t.Fatalf("image pull: %+v", got)
	}
	if l, _ := api.counts(); l != 0 {
		t.Errorf("%d log requests, want 0", l)
	}
}

// A long line is cut, never the last lines: they hold the error the
// diagnosis is for.
func TestDiagnoseLongLineKeepsTheLastLines(t *testing.T) {
	huge := "first\n" + strings.Repeat("x", 20000) + "\nError: the last line\n"
	api := &fakeAPI{evReply: serveEvents(), logReply: serveLog(huge)}
	d := newDiagnoser(t, api, 2, nil)
	got, _ := d.Diagnose(context.Background(), "shop/web-1", testPod(status(crashed(0))))
	l := got.Log("app")
	if l == nil || !l.Truncated || len(l.Lines) != 2 {
		t.Fatalf("log = %+v, want two lines, one cut", l)
	}
	if want := strings.Repeat("x", bytesPerLine) + cutMark; l.Lines[0] != want || l.Lines[1] != "Error: the last line" {
		t.Errorf("lines = %.40q…, %q", l.Lines[0], l.Lines[1])
	}
}

func TestReadTail(t *testing.T) {
	cases := []struct {
		in     string
		n, per int
		want   []string
		cut    bool
	}{
		{"", 3, 10, nil, false},
		{"a\nb\nc\n", 2, 10, []string{"b", "c"}, false},
		{"a\n\nno newline", 5, 10, []string{"a", "", "no newline"}, false},
		{"abcdef\nxy\n", 5, 4, []string{"abcd" + cutMark, "xy"}, true},
		{"ab\u00e9\u00e9\n", 5, 5, []string{"ab\u00e9" + cutMark}, true},
		{strings.Repeat("z", 10000) + "\nend", 1, 4, []string{"end"}, false},
		{strings.Repeat("z", 10000) + "\nend", 2, 4, []string{"zzzz" + cutMark, "end"}, true},
	}
	for _, c := range cases {
		got, cut, err := readTail(strings.NewReader(c.in), c.n, c.per)
		if err != nil || cut != c.cut || strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("readTail(%.20q, %d) = %q, %v, %v; want %q, %v", c.in, c.n, got, cut, err, c.want, c.cut)
		}
	}
}

// A 400 (the container has not started, or no log) is final and kept as
// the reason there is no log.
func TestDiagnoseBadRequestIsFinal(t *testing.T) {
	api := &fakeAPI{evReply: serveEvents(), logReply: func(_ int, w http.ResponseWriter, _ *http.Request) {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, `container "app" in pod "web-1" is waiting to start`)
	}}
	d := newDiagnoser(t, api, 10, nil)
	got, err := d.Diagnose(context.Background(), "shop/web-1", testPod(status(crashed(0))))
	if err != nil || got == nil || !strings.Contains(got.Log("app").Error, "is waiting to start") {
		t.Fatalf("Diagnose = %+v, %v", got, err)
	}
}

func TestEventsForbiddenSaidOnce(t *testing.T) {
	api := &fakeAPI{logReply: serveLog(""), evReply: func(_ int, w http.ResponseWriter) {
		writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, `events is forbidden: User "u" cannot list resource "events"`)
	}}
	var warn bytes.Buffer
	d := newDiagnoser(t, api, 10, &warn)
	for range 2 {
		if _, err := d.Events(context.Background(), testPod()); !errors.Is(err, ErrRefused) {
			t.Errorf("Events error = %v, want ErrRefused", err)
		}
	}
	got, _ := d.Diagnose(context.Background(), "shop/web-1", testPod(status(crashed(0))))
	if got == nil || len(got.Missing) != 1 || !strings.Contains(got.Missing[0], "events is forbidden") {
		t.Errorf("diagnosis = %+v", got)
	}
	if _, e := api.counts(); e != 1 {
		t.Errorf("%d events requests, want 1", e)
	}
	again, _ := d.Diagnose(context.Background(), "shop/web-1", testPod(status(backOff(1))))
	if again == nil || strings.Count(again.Missing[0], "not asked") != 1 {
		t.Errorf("a later diagnosis notes the refusal as %q, want one 'not asked'", again.Missing)
	}
	if strings.Count(warn.String(), "\n") != 1 {
		t.Errorf("warnings = %q", warn.String())
	}
}
