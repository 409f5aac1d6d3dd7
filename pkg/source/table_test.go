package source

import (
	"github.com/kubectl-podsync/kubectl-podsync/internal/podtest"

	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// fakeServer answers pod lists as protobuf, and as tables with or without
// objects, the way kube-apiserver does, page by page when asked for a
// limit, and records every request.
type fakeServer struct {
	t    *testing.T
	pods []corev1.Pod
	// listRV goes into the metadata of every list.
	listRV string
	// tableRows, when set, replaces the rows of an includeObject=None table.
	tableRows func(rows []metav1.TableRow) []metav1.TableRow
	// events are sent, one JSON line each, to a watch.
	events []string
	// forbid answers every request with 403; expire answers every request
	// with a continue token with 410.
	forbid, expire bool
	// jsonOnly answers a list in JSON whatever it asks for, as a server
	// or proxy that speaks no protobuf does.
	jsonOnly bool

	mu       sync.Mutex
	requests []*http.Request
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r)
	f.mu.Unlock()
	q := r.URL.Query()
	accept := r.Header.Get("Accept")
	switch {
	case f.forbid:
		writeStatus(w, http.StatusForbidden, "Forbidden")
	case f.expire && q.Get("continue") != "":
		writeStatus(w, http.StatusGone, "Expired")
	case q.Get("watch") == "true":
		w.Header().Set("Content-Type", "application/json")
		for _, e := range f.events {
			fmt.Fprintln(w, e)
		}
	case f.jsonOnly && !strings.Contains(accept, "as=Table"):
		items, meta := f.page(q)
		list := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, ListMeta: meta, Items: items}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(list); err != nil {
			f.t.Errorf("encode JSON: %v", err)
		}
	case strings.HasPrefix(accept, "application/vnd.kubernetes.protobuf"):
		items, meta := f.page(q)
		list := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, ListMeta: meta, Items: items}
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
		if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(list, w); err != nil {
			f.t.Errorf("encode protobuf: %v", err)
		}
	case strings.Contains(accept, "as=Table"):
		w.Header().Set("Content-Type", "application/json")
		items, meta := f.page(q)
		if meta.Continue != "" {
			// kube-apiserver spells the token of an exact read differently.
			meta.Continue = "table-" + meta.Continue
		}
		if err := json.NewEncoder(w).Encode(f.table(items, meta, metav1.IncludeObjectPolicy(q.Get("includeObject")))); err != nil {
			f.t.Errorf("encode table: %v", err)
		}
	default:
		http.Error(w, "unexpected request "+r.URL.String(), http.StatusBadRequest)
	}
}

func writeStatus(w http.ResponseWriter, code int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"%s","reason":%q,"code":%d}`, reason, reason, code)
}

// page serves the pods from the continue token ("at-N") on, up to the
// limit.
func (f *fakeServer) page(q url.Values) ([]corev1.Pod, metav1.ListMeta) {
	from := 0
	if c := q.Get("continue"); c != "" {
		from, _ = strconv.Atoi(strings.TrimPrefix(c, "at-"))
	}
	meta := metav1.ListMeta{ResourceVersion: f.listRV}
	items := f.pods[from:]
	if limit, _ := strconv.Atoi(q.Get("limit")); limit > 0 && limit < len(items) {
		items = items[:limit]
		meta.Continue = "at-" + strconv.Itoa(from+limit)
		left := int64(len(f.pods) - from - limit)
		meta.RemainingItemCount = &left
	}
	return items, meta
}

func (f *fakeServer) table(pods []corev1.Pod, meta metav1.ListMeta, include metav1.IncludeObjectPolicy) *metav1.Table {
	table := &metav1.Table{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"},
		ColumnDefinitions: podtest.Columns, ListMeta: meta}
	for i := range pods {
		p := &pods[i]
		row := metav1.TableRow{Cells: []interface{}{p.Name, "1/1", string(p.Status.Phase)}}
		switch include {
		case metav1.IncludeObject:
			row.Object = runtime.RawExtension{Object: p}
		case metav1.IncludeMetadata:
			row.Object = runtime.RawExtension{Object: &metav1.PartialObjectMetadata{ObjectMeta: p.ObjectMeta}}
		}
		table.Rows = append(table.Rows, row)
	}
	if include != metav1.IncludeObject && f.tableRows != nil {
		table.Rows = f.tableRows(table.Rows)
	}
	return table
}

// queries returns, per request, "kind:" and its query in a stable form.
func (f *fakeServer) queries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.requests {
		kind := "proto"
		if strings.Contains(r.Header.Get("Accept"), "as=Table") {
			kind = "table"
		}
		q := r.URL.Query()
		q.Del("timeout")
		out = append(out, kind+" "+r.URL.Path+"?"+q.Encode())
	}
	return out
}

func newTables(t *testing.T, f *fakeServer, filter Filter) Source {
	t.Helper()
	f.t = t
	client := restClient(t, f)
	return Tables(TableClients{List: client, Watch: client}, filter, nil)
}

// restClient is a JSON REST client of the server, as podsync's table
// client is.
func restClient(t *testing.T, f *fakeServer) rest.Interface {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg := &rest.Config{Host: srv.URL, APIPath: "/api", ContentConfig: rest.ContentConfig{
		GroupVersion: &corev1.SchemeGroupVersion, NegotiatedSerializer: scheme.Codecs.WithoutConversion()}}
	client, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func listRows(t *testing.T, src Source, opts metav1.ListOptions) *PodRowList {
	t.Helper()
	list, err := src.List(context.Background(), opts, Call{})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

func checkRows(t *testing.T, list *PodRowList, names ...string) {
	t.Helper()
	if len(list.Items) != len(names) {
		t.Fatalf("got %d rows, want %d", len(list.Items), len(names))
	}
	for i, row := range list.Items {
		if row.Meta().Name != names[i] || row.Pod().Spec.NodeName != "node-1" || row.Meta().Labels["app"] != "web" {
			t.Errorf("row %d: pod %s on %q labels %v, want %s with its whole object", i, row.Meta().Name, row.Pod().Spec.NodeName, row.Meta().Labels, names[i])
		}
		if wire.Cell(&list.Items[i], "Name") != names[i] || wire.Cell(&list.Items[i], "Status") != "Running" {
			t.Errorf("row %d: cells %v do not belong to %s", i, row.Cells, names[i])
		}
		if len(row.Columns) != len(podtest.Columns) {
			t.Errorf("row %d: %d columns, want %d", i, len(row.Columns), len(podtest.Columns))
		}
	}
}

func TestListJoinsProtobufPodsWithCellsOfTheSameSnapshot(t *testing.T) {
	f := &fakeServer{listRV: "42", pods: []corev1.Pod{podtest.Pod("a", "web-1", "40"), podtest.Pod("b", "web-2", "41")}}
	src := newTables(t, f, Filter{LabelSelector: "app=web"})
	list := listRows(t, src, metav1.ListOptions{ResourceVersion: "0", Limit: 500})
	checkRows(t, list, "web-1", "web-2")
	if list.ResourceVersion != "42" || list.Continue != "" {
		t.Errorf("list metadata %+v, want resourceVersion 42 and no continue", list.ListMeta)
	}
	want := []string{
		// A consistent list in pages (the first small), whatever the reflector asked.
		"proto /api/v1/pods?labelSelector=app%3Dweb&limit=500",
		// Same snapshot, exactly; the protobuf page was the last, so no limit.
		"table /api/v1/pods?includeObject=None&labelSelector=app%3Dweb&resourceVersion=42&resourceVersionMatch=Exact",
	}
	if got := f.queries(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, row := range list.Items {
		if row.Pod().ManagedFields != nil {
			t.Errorf("pod %s kept its managedFields", row.Meta().Name)
		}
	}
}

// Two pods of one name in two namespaces (web-0 of a StatefulSet in each)
// cannot be told apart by a row without objects: the page is joined by
// UID through a table with the metadata inside, so each pod gets its own
// cells even when the server's rows come in another order.
func TestListJoinsSameNamesByUID(t *testing.T) {
	a, b := podtest.Pod("a", "web-0", "40"), podtest.Pod("b", "web-0", "41")
	a.UID, b.UID = "uid-a", "uid-b"
	b.Status.Phase = corev1.PodPending
	swap := func(r []metav1.TableRow) []metav1.TableRow { r[0], r[1] = r[1], r[0]; return r }
	f := &fakeServer{listRV: "42", pods: []corev1.Pod{a, b}, tableRows: swap}
	list := listRows(t, newTables(t, f, Filter{}), metav1.ListOptions{ResourceVersion: "0"})
	for _, row := range list.Items {
		if got, want := wire.Cell(&row, "Status"), string(row.Pod().Status.Phase); got != want {
			t.Errorf("pod %s/%s got the cells of another pod: STATUS %s, its phase is %s", row.Meta().Namespace, row.Meta().Name, got, want)
		}
	}
	got := f.queries()
	if len(got) != 3 || !strings.Contains(got[2], "includeObject=Metadata") {
		t.Errorf("requests %q, want protobuf, the cells, then the table with metadata", got)
	}
}

func manyPods(n int) []corev1.Pod {
	var pods []corev1.Pod
	for i := range n {
		pods = append(pods, podtest.Pod("a", fmt.Sprintf("web-%04d", i), "40"))
	}
	return pods
}

func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestListReadsEveryPageOfOneSnapshot(t *testing.T) {
	f := &fakeServer{listRV: "42", pods: manyPods(2*PageSize + 3)}
	list := listRows(t, newTables(t, f, Filter{Namespace: "a"}), metav1.ListOptions{ResourceVersion: "0", Limit: 500})
	checkRows(t, list, podNames(f.pods)...)
	if list.ResourceVersion != "42" || list.Continue != "" || list.RemainingItemCount != nil {
		t.Errorf("list metadata %+v, want the snapshot's resourceVersion and nothing left", list.ListMeta)
	}
	got := f.queries()
	// The first page's cells need its resourceVersion; a later page's cells
	// go with its pods, at the same time, pinned by the same token.
	want := []string{
		"proto /api/v1/namespaces/a/pods?limit=500",
		"table /api/v1/namespaces/a/pods?includeObject=None&limit=500&resourceVersion=42&resourceVersionMatch=Exact",
	}
	if len(got) != 6 || strings.Join(got[:2], "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s\nwant first:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	later := []string{
		"proto /api/v1/namespaces/a/pods?continue=at-500&limit=5000",
		"proto /api/v1/namespaces/a/pods?continue=at-5500&limit=5000",
		"table /api/v1/namespaces/a/pods?continue=at-500&includeObject=None&limit=5000",
		"table /api/v1/namespaces/a/pods?continue=at-5500&includeObject=None&limit=5000",
	}
	rest := slices.Clone(got[2:])
	slices.Sort(rest)
	if strings.Join(rest, "\n") != strings.Join(later, "\n") {
		t.Errorf("later requests:\n%s\nwant, in any order:\n%s", strings.Join(rest, "\n"), strings.Join(later, "\n"))
	}
}

func TestListPassesAPageOrAVersionThrough(t *testing.T) {
	for name, tc := range map[string]struct {
		opts metav1.ListOptions
		want string
	}{
		"a page the caller asked for": {metav1.ListOptions{Continue: "at-1", Limit: 1}, "proto /api/v1/pods?continue=at-1&limit=1"},
		"a resourceVersion":           {metav1.ListOptions{ResourceVersion: "41"}, "proto /api/v1/pods?resourceVersion=41"},
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeServer{listRV: "42", pods: manyPods(3)}
			list := listRows(t, newTables(t, f, Filter{}), tc.opts)
			if got := f.queries(); !slices.Contains(got, tc.want) || len(got) != 2 {
				t.Errorf("requests %q, want %s and its cells", got, tc.want)
			}
			if tc.opts.Limit == 1 && (len(list.Items) != 1 || list.Continue != "at-2") {
				t.Errorf("got %d rows and continue %q, want the one page asked for", len(list.Items), list.Continue)
			}
		})
	}
}

func TestListWholeWhenTheSnapshotExpiresBetweenPages(t *testing.T) {
	f := &fakeServer{listRV: "42", expire: true, pods: manyPods(PageSize + 1)}
	list := listRows(t, newTables(t, f, Filter{}), metav1.ListOptions{ResourceVersion: "0", Limit: 500})
	checkRows(t, list, podNames(f.pods)...)
	// The second page's cells, asked with its pods, may be cancelled
	// before they reach the server.
	got := slices.DeleteFunc(f.queries(), func(q string) bool {
		return q == "table /api/v1/pods?continue=at-500&includeObject=None&limit=5000"
	})
	want := []string{
		"proto /api/v1/pods?limit=500",
		"table /api/v1/pods?includeObject=None&limit=500&resourceVersion=42&resourceVersionMatch=Exact",
		"proto /api/v1/pods?continue=at-500&limit=5000",
		"proto /api/v1/pods?resourceVersion=0",
		"table /api/v1/pods?includeObject=None&resourceVersion=42&resourceVersionMatch=Exact",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant the first page, the expired second, then the list as the reflector asked:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestListFallsBackToObjectsInRowsWhenTheAnswersDiffer(t *testing.T) {
	for name, rows := range map[string]func([]metav1.TableRow) []metav1.TableRow{
		"a row less":   func(r []metav1.TableRow) []metav1.TableRow { return r[:1] },
		"another name": func(r []metav1.TableRow) []metav1.TableRow { r[1].Cells[0] = "web-9"; return r },
		"no cells":     func(r []metav1.TableRow) []metav1.TableRow { r[0].Cells = nil; return r },
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeServer{listRV: "42", tableRows: rows, pods: []corev1.Pod{podtest.Pod("a", "web-1", "40"), podtest.Pod("a", "web-2", "41")}}
			list := listRows(t, newTables(t, f, Filter{}), metav1.ListOptions{ResourceVersion: "0"})
			checkRows(t, list, "web-1", "web-2")
			got := f.queries()
			if len(got) != 3 || got[2] != "table /api/v1/pods?includeObject=Object&limit=500" {
				t.Errorf("requests %q, want protobuf, cells, then the table with objects for the same page", got)
			}
		})
	}
}

func TestObjectsListsInPagesToo(t *testing.T) {
	for _, raw := range []bool{false, true} {
		t.Run(fmt.Sprintf("from protobuf bytes %v", raw), func(t *testing.T) {
			f := &fakeServer{listRV: "42", pods: manyPods(PageSize + 1)}
			f.t = t
			srv := httptest.NewServer(f)
			t.Cleanup(srv.Close)
			cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{
				ContentType: runtime.ContentTypeProtobuf, AcceptContentTypes: runtime.ContentTypeProtobuf}})
			if err != nil {
				t.Fatal(err)
			}
			var rc rest.Interface
			if raw {
				rc = restClient(t, f)
			}
			list, err := Objects(cs, cs, rc, nil, Filter{FieldSelector: "spec.nodeName=node-1"}, nil).List(context.Background(), metav1.ListOptions{ResourceVersion: "0", Limit: 500}, Call{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != PageSize+1 || list.ResourceVersion != "42" || list.Continue != "" {
				t.Fatalf("got %d pods, metadata %+v; want %d and the snapshot's resourceVersion", len(list.Items), list.ListMeta, PageSize+1)
			}
			for i, row := range list.Items {
				if row.Meta().Name != f.pods[i].Name || row.Pod().ManagedFields != nil || row.Cells != nil || row.Pod().Spec.NodeName != "node-1" {
					t.Fatalf("row %d: %s with managedFields %v and cells %v, want %s whole and bare", i, row.Meta().Name, row.Pod().ManagedFields, row.Cells, f.pods[i].Name)
				}
			}
			want := []string{
				"proto /api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1&limit=500",
				"proto /api/v1/pods?continue=at-500&fieldSelector=spec.nodeName%3Dnode-1&limit=5000",
			}
			if got := f.queries(); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestListErrorsKeepTheServersReason(t *testing.T) {
	f := &fakeServer{forbid: true}
	_, err := newTables(t, f, Filter{}).List(context.Background(), metav1.ListOptions{}, Call{})
	if err == nil || !strings.HasPrefix(err.Error(), "list pods: ") || !apierrors.IsForbidden(err) {
		t.Errorf("error %v, want a forbidden error starting with list pods:", err)
	}
}

func TestWatchDecodesOneRowPerEvent(t *testing.T) {
	pod := podtest.Pod("a", "web-1", "50")
	raw, err := json.Marshal(&pod)
	if err != nil {
		t.Fatal(err)
	}
	row := func(typ string) string {
		return fmt.Sprintf(`{"type":%q,"object":{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"50"},"columnDefinitions":null,"rows":[{"cells":["web-1","1/1","Running"],"object":%s}]}}`, typ, raw)
	}
	f := &fakeServer{listRV: "42", pods: []corev1.Pod{podtest.Pod("a", "web-1", "40")}, events: []string{
		row("MODIFIED"),
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version","reason":"Expired","code":410}}`,
	}}
	src := newTables(t, f, Filter{LabelSelector: "app=web"})
	listRows(t, src, metav1.ListOptions{}) // learns the columns
	w, err := src.Watch(context.Background(), metav1.ListOptions{ResourceVersion: "42"}, Call{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev := <-w.ResultChan()
	got, ok := ev.Object.(*wire.PodRow)
	if ev.Type != watch.Modified || !ok || got.Meta().ResourceVersion != "50" || got.Pod().Spec.NodeName != "node-1" || wire.Cell(got, "Status") != "Running" {
		t.Fatalf("first event %s %#v, want MODIFIED with the pod and its cells", ev.Type, ev.Object)
	}
	ev = <-w.ResultChan()
	if st, ok := ev.Object.(*metav1.Status); ev.Type != watch.Error || !ok || st.Code != 410 {
		t.Fatalf("second event %s %#v, want the 410 status", ev.Type, ev.Object)
	}
	last := f.queries()[len(f.queries())-1]
	if !strings.Contains(last, "includeObject=Object") || !strings.Contains(last, "labelSelector=app%3Dweb") || !strings.Contains(last, "watch=true") {
		t.Errorf("watch request %s, want the table with objects, the filter and watch=true", last)
	}
}

func BenchmarkTableWatchDecode(b *testing.B) {
	raw, err := json.Marshal(podtest.BenchPod())
	if err != nil {
		b.Fatal(err)
	}
	line := fmt.Sprintf(`{"type":"MODIFIED","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"123456"},"columnDefinitions":null,"rows":[{"cells":["svc-0001-h7wtvk49kb-4t5k7","2/2","Running",0,"5m","10.160.0.2","bench-node-00","\u003cnone\u003e","\u003cnone\u003e"],"object":%s}]}}`+"\n", raw)
	stream := strings.Repeat(line, b.N)
	body := io.NopCloser(strings.NewReader(stream))
	d := &tableDecoder{body: body, dec: json.NewDecoder(body), columns: func() []metav1.TableColumnDefinition { return podtest.Columns }}
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		typ, obj, err := d.Decode()
		if err != nil {
			b.Fatal(err)
		}
		if row, ok := obj.(*wire.PodRow); typ != watch.Modified || !ok || row.Meta().Name != "svc-0001-h7wtvk49kb-4t5k7" || len(row.Cells) != 9 {
			b.Fatalf("decoded %s %#v", typ, obj)
		}
	}
}

// BenchmarkTablePageCells reads the cells of one page of a list's table,
// as the table source asks for it (includeObject=None), and gives each pod
// its cells: read as written (cells) or by the standard decoding that a
// row of other cells falls back to (standard).
func BenchmarkTablePageCells(b *testing.B) {
	const n = PageSize
	table := metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}, ColumnDefinitions: podtest.Columns}
	rows := make([]wire.PodRow, n)
	for i := range rows {
		name := fmt.Sprintf("svc-%04d-h7wtvk49kb-4t5k7", i)
		rows[i] = *wire.RowOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}})
		table.Rows = append(table.Rows, metav1.TableRow{Cells: []any{name, "1/1", "Running", int64(0), "5m", "10.160.0.2", "bench-node-00", "<none>", "<none>"}})
	}
	raw, err := json.Marshal(table)
	if err != nil {
		b.Fatal(err)
	}
	perPod := func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/pod")
	}
	b.Run("cells", func(b *testing.B) {
		for b.Loop() {
			cells, err := wire.DecodeCellTable(raw)
			if err != nil {
				b.Fatal(err)
			}
			if ok, err := joinByPosition(rows, cells, podtest.Columns); !ok || err != nil || rows[n-1].Cells[3] != int64(0) {
				b.Fatalf("joined %v, %v", ok, err)
			}
		}
		perPod(b)
	})
	b.Run("standard", func(b *testing.B) {
		for b.Loop() {
			table, err := decodeTable(raw)
			if err != nil {
				b.Fatal(err)
			}
			for i := range rows {
				rows[i].Cells, rows[i].Columns = table.Rows[i].Cells, podtest.Columns
				wire.InternCells(&rows[i])
			}
		}
		perPod(b)
	})
}
