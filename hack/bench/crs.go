package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
)

// The custom resource scenario: a Certificate-like kind (a status
// subresource with a Ready condition, as cert-manager has it), n objects
// of it in one namespace, all Ready, gated by `kubectl podsync -f` on a
// manifest of them against the same on a manifest of one, and against
// `kubectl wait --for=condition=Ready --all`. podsync watches custom
// resources with one informer per kind and namespace: the API server's
// request counters say how many LISTs and WATCHes of the kind each client
// made.
const (
	crGroup     = "bench.podsync.io"
	crKind      = "Certificate"
	crResource  = "certificates"
	crNamespace = "bench-certs"
	crTimeout   = "5m"
)

var crGVR = schema.GroupVersionResource{Group: crGroup, Version: "v1", Resource: crResource}

// crdManifest is the kind: its status is free-form, as the tests' kinds.
const crdManifest = `{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {"name": "` + crResource + `.` + crGroup + `"},
  "spec": {
    "group": "` + crGroup + `",
    "scope": "Namespaced",
    "names": {"kind": "` + crKind + `", "plural": "` + crResource + `", "singular": "certificate", "listKind": "CertificateList"},
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
    }]
  }
}`

// crName is the name of the i-th custom resource.
func crName(i int) string { return fmt.Sprintf("cert-%05d", i) }

// crManifest is the YAML of the first n custom resources, as a user's
// manifest holds them: no status.
func crManifest(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		if i > 0 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, "apiVersion: %s/v1\nkind: %s\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  secretName: %s-tls\n  dnsNames: [%s.example.com]\n  issuerRef: {name: bench-issuer, kind: ClusterIssuer}\n",
			crGroup, crKind, crName(i), crNamespace, crName(i), crName(i))
	}
	return b.Bytes()
}

// crObject is the i-th custom resource as the bench creates it.
func crObject(i int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": crGroup + "/v1",
		"kind":       crKind,
		"metadata":   map[string]any{"name": crName(i), "namespace": crNamespace},
		"spec": map[string]any{
			"secretName": crName(i) + "-tls",
			"dnsNames":   []any{crName(i) + ".example.com"},
			"issuerRef":  map[string]any{"name": "bench-issuer", "kind": "ClusterIssuer"},
		},
	}}
}

// readyStatus is what an operator writes once the certificate is issued.
func readyStatus(generation int64, now time.Time) map[string]any {
	return map[string]any{
		"observedGeneration": generation,
		"notAfter":           now.Add(90 * 24 * time.Hour).UTC().Format(time.RFC3339),
		"conditions": []any{map[string]any{
			"type": "Ready", "status": "True", "reason": "Ready", "observedGeneration": generation,
			"message":            "Certificate is up to date and has not expired",
			"lastTransitionTime": now.UTC().Format(time.RFC3339),
		}},
	}
}

// crCommands are the scenario's clients, for a manifest of n objects
// (many) and one of a single object (one).
func crCommands(n int, many, one string) []command {
	resource := crResource + "." + crGroup
	return []command{
		{id: "podsync-crs", label: fmt.Sprintf("`kubectl podsync -f <%d objects> --until ready --timeout %s`", n, crTimeout),
			args: []string{"podsync", "-f", many, "--until", "ready", "--timeout", crTimeout}},
		{id: "podsync-cr1", label: fmt.Sprintf("`kubectl podsync -f <1 object> --until ready --timeout %s`", crTimeout),
			args: []string{"podsync", "-f", one, "--until", "ready", "--timeout", crTimeout}},
		{id: "wait-crs", label: fmt.Sprintf("`kubectl wait --for=condition=Ready %s --all -n %s --timeout %s`", resource, crNamespace, crTimeout),
			args: []string{"wait", "--for=condition=Ready", resource, "--all", "-n", crNamespace, "--timeout", crTimeout}, out: outLines},
		{id: "wait-cr1", label: fmt.Sprintf("`kubectl wait --for=condition=Ready %s/%s -n %s --timeout %s`", resource, crName(0), crNamespace, crTimeout),
			args: []string{"wait", "--for=condition=Ready", resource + "/" + crName(0), "-n", crNamespace, "--timeout", crTimeout}, out: outLines},
	}
}

// crResult is the scenario's measurements.
type crResult struct {
	n    int
	load time.Duration
	// commands: podsync on n objects and on one, kubectl wait on n and one.
	commands []*cmdResult
	// requests are the API server's requests of the kind, by verb, during
	// one more run of each command, by command id.
	requests map[string]map[string]int
	// client are the requests each client logged in that run, by id.
	client map[string]clientRequests
	// otherAPIServers are other kube-apiservers running meanwhile.
	otherAPIServers []int
}

func (r *crResult) find(id string) *cmdResult {
	for _, c := range r.commands {
		if c.cmd.id == id {
			return c
		}
	}
	return nil
}

// measureCustomResources starts a cluster of its own, loads the custom
// resources and measures the scenario's commands.
func (e *env) measureCustomResources(ctx context.Context, tmp string) (*crResult, error) {
	n := e.cfg.crs
	c, err := e.newCluster(ctx, filepath.Join(tmp, "crs"), false)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := c.Stop(); err != nil {
			e.logf("stop the cluster: %v", err)
		}
	}()
	ce := *e
	ce.cluster, ce.kubeconfig, ce.live = c, c.Kubeconfig, nil
	if err := ce.stopControllers(); err != nil {
		return nil, err
	}
	ce.apiMeter = newPeakMeter(c.PIDs()[localcluster.APIServer])
	cfg, err := clientConfig(ce.kubeconfig)
	if err != nil {
		return nil, err
	}
	res := &crResult{n: n}
	t := time.Now()
	if err := loadCustomResources(ctx, cfg, n, e.cfg.loaders); err != nil {
		return nil, fmt.Errorf("load %d custom resources: %w", n, err)
	}
	res.load = time.Since(t)
	e.logf("%d custom resources Ready (load %s)", n, res.load.Round(100*time.Millisecond))
	many, one := filepath.Join(tmp, "crs.yaml"), filepath.Join(tmp, "cr1.yaml")
	if err := os.WriteFile(many, crManifest(n), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(one, crManifest(1), 0o644); err != nil {
		return nil, err
	}
	res.otherAPIServers = otherAPIServers(c.PIDs()[localcluster.APIServer])
	for _, cmd := range crCommands(n, many, one) {
		res.commands = append(res.commands, &cmdResult{cmd: cmd})
	}
	if err := ce.measureCRRounds(ctx, res); err != nil {
		return res, err
	}
	if err = ce.countCRRequests(ctx, cfg, res); err != nil {
		return res, err
	}
	return res, crRequestCheck(res)
}

// measureCRRounds runs each command once untimed (with -warmup), then
// cfg.runs rounds in a shuffled order.
func (e *env) measureCRRounds(ctx context.Context, res *crResult) error {
	if e.cfg.warmup {
		for _, r := range res.commands {
			if _, err := e.measureCR(ctx, r.cmd, res.n); err != nil {
				return err
			}
		}
	}
	for round := range e.cfg.runs {
		for _, k := range roundOrder(round, len(res.commands)) {
			r := res.commands[k]
			s, err := e.measureCR(ctx, r.cmd, res.n)
			if err != nil {
				return err
			}
			r.samples = append(r.samples, s)
			e.logf("  %d custom resources, run %d/%d: %-12s wall %6.2fs  cpu %6.2fs  maxrss %5.0f MiB",
				res.n, round+1, e.cfg.runs, r.cmd.id, s.wall.Seconds(), s.cpu.Seconds(), float64(s.maxRSS)/(1<<20))
		}
	}
	return nil
}

// measureCR runs c once; it must exit 0 (every object Ready), and
// kubectl wait must have named every object it waited for.
func (e *env) measureCR(ctx context.Context, c command, n int) (sample, error) {
	s, err := e.runCommand(ctx, c, nil, nil)
	if err != nil {
		return s, err
	}
	want := int64(n)
	if strings.HasSuffix(c.id, "-cr1") {
		want = 1
	}
	if c.out == outLines && s.outLine != want {
		return s, fmt.Errorf("%s printed %d lines, want %d", c.id, s.outLine, want)
	}
	return s, nil
}

// countCRRequests runs each command once more, with -v=6, and counts the
// requests of the kind the API server served meanwhile, by verb, and the
// requests the client logged. A WATCH is counted by the server when it
// ends, so its counters are read once it holds no watch of the kind.
func (e *env) countCRRequests(ctx context.Context, cfg *rest.Config, res *crResult) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	res.requests, res.client = map[string]map[string]int{}, map[string]clientRequests{}
	for _, r := range res.commands {
		before, err := crRequestCounts(ctx, cs)
		if err != nil {
			return err
		}
		c := r.cmd
		c.args = append(slices.Clone(c.args), "-v=6")
		var log bytes.Buffer
		if _, err := e.runCommand(ctx, c, nil, &log); err != nil {
			return err
		}
		var after crCounts
		for wait := 0; ; wait++ {
			if after, err = crRequestCounts(ctx, cs); err != nil {
				return err
			}
			if after.watching <= before.watching || wait == 50 {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		d := map[string]int{}
		for verb, v := range after.byVerb {
			if v-before.byVerb[verb] > 0 {
				d[verb] = v - before.byVerb[verb]
			}
		}
		res.requests[r.cmd.id] = d
		res.client[r.cmd.id] = parseClientRequests(log.Bytes())
		e.logf("  %s: the server's requests of %s.%s: %s; the client's log: %s", r.cmd.id, crResource, crGroup, verbCounts(d), res.client[r.cmd.id])
	}
	return nil
}

// clientRequests are the requests a client logged at -v=6.
type clientRequests struct {
	total, discovery, list, watch, get int
}

func (c clientRequests) String() string {
	return fmt.Sprintf("%d requests, %d of them discovery; of the kind %d LIST, %d WATCH, %d GET", c.total, c.discovery, c.list, c.watch, c.get)
}

// responseLine is client-go's log of one response at -v=6.
var responseLine = regexp.MustCompile(`"Response" verb="([A-Z]+)" url="([^"]+)"`)

// parseClientRequests counts the responses client-go logged: discovery
// (/api, /apis and a group version's resource list, /openapi) and the
// kind's lists, watches and gets.
func parseClientRequests(log []byte) clientRequests {
	var c clientRequests
	kindPath := "/apis/" + crGroup + "/v1/"
	for _, m := range responseLine.FindAllSubmatch(log, -1) {
		u, err := url.Parse(string(m[2]))
		if err != nil {
			continue
		}
		c.total++
		p := strings.TrimSuffix(u.Path, "/")
		parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
		switch {
		case strings.HasPrefix(p, "/openapi"), parts[0] == "api" && len(parts) <= 2, parts[0] == "apis" && len(parts) <= 3:
			c.discovery++
		case strings.HasPrefix(p, kindPath) && parts[len(parts)-1] == crResource:
			if u.Query().Get("watch") == "true" || u.Query().Get("watch") == "1" {
				c.watch++
			} else {
				c.list++
			}
		case strings.HasPrefix(p, kindPath) && len(parts) >= 2 && parts[len(parts)-2] == crResource:
			c.get++
		}
	}
	return c
}

// crRequestCheck is the scenario's claim: podsync reads n objects of one
// kind in one namespace with one LIST and at most one WATCH, as it reads
// one object.
func crRequestCheck(res *crResult) error {
	d := res.requests["podsync-crs"]
	if d["LIST"] != 1 || d["WATCH"] > 1 {
		return fmt.Errorf("podsync made %s for %d custom resources of one kind and namespace, want 1 LIST and at most 1 WATCH", verbCounts(d), res.n)
	}
	return nil
}

func verbCounts(d map[string]int) string {
	return fmt.Sprintf("%d LIST, %d WATCH, %d GET", d["LIST"], d["WATCH"], d["GET"])
}

// crCounts are the API server's counters for the kind.
type crCounts struct {
	byVerb   map[string]int
	watching int // watches of the kind open now
}

// crRequestCounts reads apiserver_request_total (requests served, by verb)
// and apiserver_longrunning_requests (watches open) for the kind.
func crRequestCounts(ctx context.Context, cs kubernetes.Interface) (crCounts, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return crCounts{}, fmt.Errorf("read the API server's metrics: %w", err)
	}
	return parseCRCounts(raw)
}

// parseCRCounts reads the kind's counters from the API server's metrics
// in the Prometheus text format.
func parseCRCounts(raw []byte) (crCounts, error) {
	c := crCounts{byVerb: map[string]int{}}
	found := false
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, "{")
		if !ok || (name != "apiserver_request_total" && name != "apiserver_longrunning_requests") {
			continue
		}
		found = found || name == "apiserver_request_total"
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		l := metricLabels(labels)
		if l["group"] != crGroup || l["resource"] != crResource || l["subresource"] != "" {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return c, fmt.Errorf("metric line %q: %w", line, err)
		}
		if name == "apiserver_longrunning_requests" {
			if l["verb"] == "WATCH" {
				c.watching += int(v)
			}
			continue
		}
		c.byVerb[l["verb"]] += int(v)
	}
	if err := sc.Err(); err != nil {
		return c, err
	}
	if !found {
		return c, errors.New("the API server's metrics have no apiserver_request_total")
	}
	return c, nil
}

// metricLabels parses `a="x",b="y"`; the values the bench reads hold no
// quotes or commas.
func metricLabels(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}

// loadCustomResources installs the kind, waits until it is served, and
// creates n Ready objects of it with that many goroutines: each object is
// created, then its status subresource written.
func loadCustomResources(ctx context.Context, cfg *rest.Config, n, workers int) error {
	jcfg := rest.CopyConfig(cfg)
	jcfg.ContentType, jcfg.AcceptContentTypes = "application/json", "application/json"
	dc, err := dynamic.NewForConfig(jcfg)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crd := &unstructured.Unstructured{}
	if err := crd.UnmarshalJSON([]byte(crdManifest)); err != nil {
		return fmt.Errorf("the CRD: %w", err)
	}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dc.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the CRD: %w", err)
	}
	if err := waitServed(ctx, cs, dc); err != nil {
		return err
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": crNamespace}}}
	if _, err := dc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", crNamespace, err)
	}
	api := dc.Resource(crGVR).Namespace(crNamespace)
	var next atomic.Int64
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n && ctx.Err() == nil; i = int(next.Add(1)) - 1 {
				if err := createReady(ctx, api, i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := errors.Join(collect(errs)...); err != nil {
		return err
	}
	list, err := api.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	ready := 0
	for _, o := range list.Items {
		if crReady(o.Object) {
			ready++
		}
	}
	if len(list.Items) != n || ready != n {
		return fmt.Errorf("%d objects, %d Ready, want %d Ready", len(list.Items), ready, n)
	}
	return nil
}

func collect(errs <-chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

// createReady creates the i-th object and writes its status; one left by
// an earlier run is given its status again.
func createReady(ctx context.Context, api dynamic.ResourceInterface, i int) error {
	obj, err := api.Create(ctx, crObject(i), metav1.CreateOptions{FieldManager: fieldManager})
	if apierrors.IsAlreadyExists(err) {
		obj, err = api.Get(ctx, crName(i), metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", crName(i), err)
	}
	obj.Object["status"] = readyStatus(obj.GetGeneration(), time.Now())
	if _, err := api.UpdateStatus(ctx, obj, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		return fmt.Errorf("status of %s: %w", crName(i), err)
	}
	return nil
}

// crReady says whether an object's Ready condition is True.
func crReady(obj map[string]any) bool {
	conds, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// waitServed waits until discovery lists the kind and a list of it
// answers.
func waitServed(ctx context.Context, cs kubernetes.Interface, dc dynamic.Interface) error {
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := cs.Discovery().ServerResourcesForGroupVersion(crGroup + "/v1")
		if err == nil {
			_, err = dc.Resource(crGVR).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the kind %s.%s is not served after a minute: %w", crResource, crGroup, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// writeCustomResources is the scenario's section of the report.
func (r *report) writeCustomResources(b *strings.Builder) {
	c := r.crs
	if c == nil {
		return
	}
	fmt.Fprintf(b, "#### %d custom resources of one kind in one namespace\n\n", c.n)
	fmt.Fprintf(b, "A Certificate-like kind (%s.%s, a status subresource, a Ready condition), %d objects in namespace %s, created and given status Ready=True in %s; every command must exit 0. Requests, in one more run of each command with -v=6: LIST / WATCH / GET of the kind as the API server counted them (apiserver_request_total, read once its watches of the kind had ended; it counts a LIST narrowed to one name as a GET), and every request the client logged, discovery (/api, /apis, a group version, /openapi) in brackets.\n\n",
		crResource, crGroup, c.n, crNamespace, c.load.Round(100*time.Millisecond))
	if len(c.otherAPIServers) > 0 {
		fmt.Fprintf(b, "Other kube-apiservers running on the machine meanwhile: %d (pids %v): numbers are noisier.\n\n", len(c.otherAPIServers), c.otherAPIServers)
	}
	floor := c.find("wait-crs")
	b.WriteString("| command | wall s | CPU s | peak RSS MiB | LIST / WATCH / GET of the kind | requests (discovery) | wall vs kubectl wait | RSS vs kubectl wait |\n|---|---|---|---|---|---|---|---|\n")
	for _, x := range c.commands {
		if !x.measured() {
			fmt.Fprintf(b, "| %s | not measured | | | | | | |\n", x.cmd.label)
			continue
		}
		d, counted := c.requests[x.cmd.id]
		reqs := "—"
		if counted {
			reqs = fmt.Sprintf("%d / %d / %d", d["LIST"], d["WATCH"], d["GET"])
		}
		sent := "—"
		if cr, ok := c.client[x.cmd.id]; ok {
			sent = fmt.Sprintf("%d (%d)", cr.total, cr.discovery)
		}
		vsW, vsR := "", ""
		if x.cmd.id == "podsync-crs" && floor.measured() {
			vsW, vsR = ratio(x.wall().median, floor.wall().median), ratio(x.rss().median, floor.rss().median)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", x.cmd.label,
			spread(x.wall(), "%.2f"), spread(x.cpu(), "%.2f"), spread(x.rss(), "%.0f"), reqs, sent, vsW, vsR)
	}
	b.WriteString("\n")
	var added []string
	for _, pair := range [][3]string{{"podsync-crs", "podsync-cr1", "podsync"}, {"wait-crs", "wait-cr1", "kubectl wait"}} {
		many, one := c.find(pair[0]), c.find(pair[1])
		if many.measured() && one.measured() && c.n > 1 {
			per := (many.rss().median - one.rss().median) * 1000 / float64(c.n-1)
			added = append(added, fmt.Sprintf("%s %.1f MiB (%.0f against %.0f MiB)", pair[2], per, many.rss().median, one.rss().median))
		}
	}
	if len(added) > 0 {
		fmt.Fprintf(b, "Peak RSS added per 1,000 custom resources (median of %d objects minus median of 1): %s.\n\n", c.n, strings.Join(added, "; "))
	}
	if d, ok := c.requests["podsync-crs"]; ok {
		fmt.Fprintf(b, "One informer for the kind and namespace (1 LIST and at most 1 WATCH for %d objects): %s (%s).\n\n",
			c.n, verdict(d["LIST"] == 1 && d["WATCH"] <= 1), verbCounts(d))
	}
}
