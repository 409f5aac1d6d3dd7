package main

import (
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func TestParseCRCountsReadsTheKindOnly(t *testing.T) {
	raw := `# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="bench.podsync.io",resource="certificates",scope="namespace",subresource="",verb="LIST",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="bench.podsync.io",resource="certificates",scope="resource",subresource="",verb="LIST",version="v1"} 2
apiserver_request_total{code="0",component="apiserver",dry_run="",group="bench.podsync.io",resource="certificates",scope="namespace",subresource="",verb="WATCH",version="v1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="bench.podsync.io",resource="certificates",scope="resource",subresource="status",verb="UPDATE",version="v1"} 1000
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 7
apiserver_longrunning_requests{component="apiserver",group="bench.podsync.io",resource="certificates",scope="namespace",subresource="",verb="WATCH",version="v1"} 1
apiserver_longrunning_requests{component="apiserver",group="",resource="pods",scope="cluster",subresource="",verb="WATCH",version="v1"} 5
`
	c, err := parseCRCounts([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if c.byVerb["LIST"] != 5 || c.byVerb["WATCH"] != 4 || c.byVerb["UPDATE"] != 0 || c.watching != 1 {
		t.Errorf("counts %+v, want 5 LIST, 4 WATCH, no UPDATE of the main resource, 1 watch open", c)
	}
	if _, err := parseCRCounts([]byte("process_cpu_seconds_total 1\n")); err == nil {
		t.Error("metrics without apiserver_request_total: no error")
	}
}

func TestCRManifestHoldsEveryObject(t *testing.T) {
	docs := strings.Split(string(crManifest(3)), "---\n")
	if len(docs) != 3 {
		t.Fatalf("%d documents, want 3", len(docs))
	}
	for i, d := range docs {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(d), &obj); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		md, _ := obj["metadata"].(map[string]any)
		if obj["kind"] != crKind || obj["apiVersion"] != crGroup+"/v1" || md["name"] != crName(i) || md["namespace"] != crNamespace {
			t.Errorf("document %d: %v", i, obj)
		}
	}
	if !crReady(map[string]any{"status": readyStatus(1, time.Now())}) {
		t.Error("the status the bench writes is not Ready")
	}
}

func TestCustomResourceReport(t *testing.T) {
	cmds := crCommands(1000, "/tmp/many.yaml", "/tmp/one.yaml")
	res := &crResult{n: 1000, load: 3 * time.Second, requests: map[string]map[string]int{
		"podsync-crs": {"LIST": 1, "WATCH": 1},
		"wait-crs":    {"LIST": 1001, "WATCH": 1000},
	}, client: map[string]clientRequests{"podsync-crs": {total: 1005, discovery: 1003, list: 1, watch: 1}}}
	for i, rss := range []float64{70, 60, 90, 40} {
		res.commands = append(res.commands, result(cmds[i], rss, 1, 2, 3))
	}
	res.commands[2] = result(cmds[2], 90, 10, 20, 30)
	var b strings.Builder
	(&report{crs: res}).writeCustomResources(&b)
	containsAll(t, "custom resource section", b.String(),
		"#### 1000 custom resources of one kind in one namespace",
		"| `kubectl podsync -f <1000 objects> --until ready --timeout 5m` | 2.00 (1.00–3.00) | 0.00 (0.00–0.00) | 70 (70–70) | 1 / 1 / 0 | 1005 (1003) | 0.10× | 0.78× |",
		"| `kubectl wait --for=condition=Ready certificates.bench.podsync.io --all -n bench-certs --timeout 5m` | 20.00 (10.00–30.00) | 0.00 (0.00–0.00) | 90 (90–90) | 1001 / 1000 / 0 | — |  |  |",
		"| `kubectl podsync -f <1 object> --until ready --timeout 5m` | 2.00 (1.00–3.00) | 0.00 (0.00–0.00) | 60 (60–60) | — |",
		"podsync 10.0 MiB (70 against 60 MiB); kubectl wait 50.1 MiB (90 against 40 MiB)",
		"(1 LIST and at most 1 WATCH for 1000 objects): met (1 LIST, 1 WATCH, 0 GET)",
	)
	if err := crRequestCheck(res); err != nil {
		t.Errorf("check: %v", err)
	}
	res.requests["podsync-crs"] = map[string]int{"LIST": 1000, "WATCH": 1000}
	if err := crRequestCheck(res); err == nil {
		t.Error("a LIST per object passed the check")
	}
}

func TestParseClientRequests(t *testing.T) {
	log := `I1206 19:40:01.000000    1 round_trippers.go:632] "Response" verb="GET" url="https://127.0.0.1:6443/api?timeout=32s" status="200 OK" milliseconds=3
I1206 19:40:01.000000    1 round_trippers.go:632] "Response" verb="GET" url="https://127.0.0.1:6443/apis/bench.podsync.io/v1" status="200 OK" milliseconds=3
I1206 19:40:01.000000    1 round_trippers.go:632] "Response" verb="GET" url="https://127.0.0.1:6443/apis/bench.podsync.io/v1/" status="200 OK" milliseconds=3
I1206 19:40:01.000000    1 round_trippers.go:632] "Response" verb="GET" url="https://127.0.0.1:6443/openapi/v3" status="200 OK" milliseconds=3
I1206 19:40:01.000000    1 round_trippers.go:632] "Response" verb="GET" url="https://127.0.0.1:6443/apis/bench.podsync.io/v1/namespaces/bench-certs/certificates?limit=500" status="200 OK" milliseconds=9
I1206 19:40:01.000000    1 round_trippers.go:632] "Response" verb="GET" url="https://127.0.0.1:6443/apis/bench.podsync.io/v1/namespaces/bench-certs/certificates?allowWatchBookmarks=true&resourceVersion=5&watch=true" status="200 OK" milliseconds=1
I1206 19:40:01.000000    1 round_trippers.go:632] "Response" verb="GET" url="https://127.0.0.1:6443/apis/bench.podsync.io/v1/namespaces/bench-certs/certificates/cert-00000" status="200 OK" milliseconds=1
I1206 19:40:01.000000    1 round_trippers.go:632] "Response" verb="GET" url="https://127.0.0.1:6443/api/v1/namespaces/bench-certs/pods?limit=500" status="200 OK" milliseconds=1
`
	got := parseClientRequests([]byte(log))
	want := clientRequests{total: 8, discovery: 4, list: 1, watch: 1, get: 1}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
