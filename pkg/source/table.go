package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	kjson "sigs.k8s.io/json"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// TableAccept asks for server-side printing, as kubectl does for its
// human-readable output; the plain JSON fallback is there so that a server
// without tables answers with something we can name in an error.
const TableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io," +
	"application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

// TableClients are the REST clients of a table source: List makes list
// requests, which --request-timeout bounds; Watch makes watch requests and
// must have no client timeout, since a watch is meant to stay open.
type TableClients struct {
	List, Watch rest.Interface
}

// Tables lists and watches pods with the server's table cells, and hands the
// reflector one PodRow per pod: the reflector cannot store Tables, but it
// can store rows. A list joins protobuf pods with a Table without objects;
// a watch reads one-row Tables with the object inside.
func Tables(c TableClients, f Filter, r Reporter) Source {
	t := &tables{clients: c, filter: f, skip: skipper(r)}
	return Source{
		List: func(ctx context.Context, opts metav1.ListOptions, call Call) (*PodRowList, error) {
			return listReported(ctx, f.apply(opts), call, t.list, r)
		},
		// A table is never streamed: nothing for the call's observer.
		Watch: func(ctx context.Context, opts metav1.ListOptions, _ Call) (watch.Interface, error) {
			w, err := t.watch(ctx, f.apply(opts))
			orNop(r).Result("watch", err)
			return w, err
		},
	}
}

// tables is the state of one table source: the column definitions, shared
// by every row so that the printer prints one header.
type tables struct {
	clients TableClients
	filter  Filter
	// skip hears of each pod that does not decode (see skipper).
	skip func(*wire.PodError)

	mu      sync.Mutex
	columns []metav1.TableColumnDefinition
}

// request asks for pods as a table; opts already carry the filter.
func (t *tables) request(c rest.Interface, opts metav1.ListOptions, include metav1.IncludeObjectPolicy) *rest.Request {
	return t.podsRequest(c, opts).
		Param("includeObject", string(include)).
		SetHeader("Accept", TableAccept)
}

func (t *tables) podsRequest(c rest.Interface, opts metav1.ListOptions) *rest.Request {
	return podsRequest(c, t.filter.Namespace, opts)
}

func podsRequest(c rest.Interface, namespace string, opts metav1.ListOptions) *rest.Request {
	req := c.Get().Resource("pods").VersionedParams(&opts, metav1.ParameterCodec)
	if namespace != "" {
		req = req.Namespace(namespace)
	}
	return req
}

// readPods lists one page of pods as protobuf, or else JSON, and decodes
// each pod with d as it arrives (see readPodList); meta, if not nil, has
// the page's list metadata as soon as it is read. An answer that is not
// protobuf is read with client-go's decoding (see wire.ReadList).
func readPods(ctx context.Context, c rest.Interface, namespace string, opts metav1.ListOptions, d wire.Decoder, meta func(metav1.ListMeta)) (*PodRowList, error) {
	body, err := podsRequest(c, namespace, opts).SetHeader("Accept", wire.ListAccept).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	defer func() { _ = body.Close() }()
	out := &PodRowList{Items: make([]wire.PodRow, 0, max(opts.Limit, 0))}
	listMeta := func(m metav1.ListMeta) {
		out.ListMeta = m
		if meta != nil {
			meta(m)
		}
	}
	if err := wire.ReadList(body, &d, listMeta, func(row wire.PodRow) { out.Items = append(out.Items, row) }); err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	return out, nil
}

// list fetches the pods as protobuf and then, at exactly the same
// resourceVersion, the server's table for them without objects
// (includeObject=None). Asking for the objects inside the table instead
// makes the server encode every pod as JSON and the client decode it, which
// at tens of thousands of pods is most of the time of a list and several
// times its bytes. The cells are the same either way; a page whose rows
// cannot be paired with its pods for sure is joined another way (join).
// The pods' bytes are read by wire.ReadList: the table is asked for as
// soon as the page's metadata is read, and decoded while the pods are.
func (t *tables) list(ctx context.Context, opts metav1.ListOptions) (*PodRowList, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A later page is pinned by its continue token already, so its cells
	// are fetched while the pods are: the server prints one while the
	// client decodes the other.
	var cells <-chan cellsResult
	if opts.Continue != "" {
		cells = t.listCellsAsync(ctx, opts)
	}
	d := wire.Decoder{Lean: t.filter.Lean, KeepManagedFields: t.filter.KeepManagedFields, Skip: t.skip}
	page, err := readPods(ctx, t.clients.List, t.filter.Namespace, opts, d, func(meta metav1.ListMeta) {
		if cells == nil {
			cells = t.listCellsAsync(ctx, cellOptions(opts, meta))
		}
	})
	if err != nil {
		return nil, err
	}
	if cells == nil { // an answer without list metadata
		cells = t.listCellsAsync(ctx, cellOptions(opts, page.ListMeta))
	}
	r := <-cells
	if r.err != nil {
		return nil, r.err
	}
	return t.join(ctx, opts, page.ListMeta, page.Items, r.table)
}

// join pairs the rows with their cells.
func (t *tables) join(ctx context.Context, opts metav1.ListOptions, meta metav1.ListMeta, rows []wire.PodRow, table *wire.CellTable) (*PodRowList, error) {
	columns := t.remember(table.ColumnDefinitions)
	if !uniqueNames(rows) {
		return t.joinByUID(ctx, opts, meta, rows)
	}
	joined, err := joinByPosition(rows, table, columns)
	if err != nil {
		return nil, err
	}
	if joined {
		return &PodRowList{ListMeta: meta, Items: rows}, nil
	}
	return t.listWithObjects(ctx, opts)
}

// cellOptions asks for the table of the same pods as the page just listed:
// a first page pins the snapshot with its resourceVersion; a later page's
// continue token pins it already. A page that ended the list ends it for
// the table too.
func cellOptions(opts metav1.ListOptions, meta metav1.ListMeta) metav1.ListOptions {
	if opts.Continue == "" {
		opts.ResourceVersion = meta.ResourceVersion
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchExact
	}
	if meta.Continue == "" {
		opts.Limit = 0
	}
	return opts
}

// joinByPosition gives each row its table row's cells. Both lists come
// from one snapshot in key order (namespace, then name), so they pair by
// position; the counts and the Name cell confirm it, and it returns false
// when they do not. A row carries no namespace or UID, so the caller pairs
// by position only pages whose names are unique: with --all-namespaces,
// web-0 of two namespaces could otherwise take each other's cells. (The
// continue tokens may differ in form: the API server writes them
// differently for exact and for consistent reads.)
func joinByPosition(rows []wire.PodRow, table *wire.CellTable, columns []metav1.TableColumnDefinition) (bool, error) {
	name := wire.ColumnIndex(columns, "Name")
	if name < 0 || len(table.Rows) != len(rows) {
		klog.V(2).InfoS("The table rows do not line up with the pods; listing the table with objects instead",
			"pods", len(rows), "rows", len(table.Rows))
		return false, nil
	}
	n := len(columns)
	// One allocation for the page's cells. A row replaced later leaves its
	// slots in the array, which lives while any row of the page does: at
	// most the cells of the first list, a few MB at 50,000 pods.
	space := make([]any, len(rows)*n)
	for i := range rows {
		if err := wire.RowCells(&rows[i], table.Rows[i].Cells, columns, space[i*n:i*n:(i+1)*n]); err != nil {
			return false, fmt.Errorf("list pods: row %d: %w", i, err)
		}
		if cells := rows[i].Cells; name >= len(cells) || cells[name] != rows[i].Meta().Name {
			klog.V(2).InfoS("A table row names another pod; listing the table with objects instead", "row", i, "pod", rows[i].Meta().Name)
			return false, nil
		}
	}
	return true, nil
}

func uniqueNames(rows []wire.PodRow) bool {
	seen := make(map[string]struct{}, len(rows))
	for i := range rows {
		if _, dup := seen[rows[i].Meta().Name]; dup {
			return false
		}
		seen[rows[i].Meta().Name] = struct{}{}
	}
	return true
}

// joinByUID pairs the page's pods with the rows of the table of the same
// pods with their metadata (namespace, name and UID) inside. A pod the
// table does not hold means the two answers disagree: the page is then
// read once more as a table with the objects inside, which needs no join.
func (t *tables) joinByUID(ctx context.Context, opts metav1.ListOptions, meta metav1.ListMeta, rows []wire.PodRow) (*PodRowList, error) {
	table, err := t.listTable(ctx, cellOptions(opts, meta), metav1.IncludeMetadata)
	if err != nil {
		return nil, err
	}
	byUID := make(map[types.UID]*metav1.TableRow, len(table.Rows))
	for i := range table.Rows {
		m := &metav1.PartialObjectMetadata{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(table.Rows[i].Object.Raw, m); err != nil {
			return nil, fmt.Errorf("list pods: row %d: decode metadata: %w", i, err)
		}
		byUID[m.UID] = &table.Rows[i]
	}
	columns := t.remember(table.ColumnDefinitions)
	for i := range rows {
		row := byUID[rows[i].Meta().UID]
		if row == nil || len(byUID) != len(rows) {
			return t.listWithObjects(ctx, opts)
		}
		rows[i].Cells, rows[i].Columns = row.Cells, columns
		wire.InternCells(&rows[i])
	}
	return &PodRowList{ListMeta: meta, Items: rows}, nil
}

// rawBody is the answer's bytes, or its error with the server's Status
// (its reason and message) when it sent one.
func rawBody(r rest.Result) ([]byte, error) {
	if err := r.Error(); err != nil {
		return nil, err
	}
	return r.Raw()
}

// listWithObjects lists the table with each pod inside its row.
func (t *tables) listWithObjects(ctx context.Context, opts metav1.ListOptions) (*PodRowList, error) {
	table, err := t.listTable(ctx, opts, metav1.IncludeObject)
	if err != nil {
		return nil, err
	}
	columns := t.remember(table.ColumnDefinitions)
	out := &PodRowList{ListMeta: table.ListMeta, Items: make([]wire.PodRow, len(table.Rows))}
	for i := range table.Rows {
		if err := fillRow(&out.Items[i], &table.Rows[i], columns, t.filter.KeepManagedFields); err != nil {
			return nil, fmt.Errorf("list pods: row %d: %w", i, err)
		}
		if t.filter.Lean {
			wire.Lean(&out.Items[i])
		}
	}
	return out, nil
}

type cellsResult struct {
	table *wire.CellTable
	err   error
}

// listCellsAsync lists the table without objects in the background.
func (t *tables) listCellsAsync(ctx context.Context, opts metav1.ListOptions) <-chan cellsResult {
	out := make(chan cellsResult, 1)
	go func() {
		raw, err := rawBody(t.request(t.clients.List, opts, metav1.IncludeNone).Do(ctx))
		var table *wire.CellTable
		if err == nil {
			table, err = wire.DecodeCellTable(raw)
		}
		if err != nil {
			err = fmt.Errorf("list pods: %w", err)
		}
		out <- cellsResult{table, err}
	}()
	return out
}

func (t *tables) listTable(ctx context.Context, opts metav1.ListOptions, include metav1.IncludeObjectPolicy) (*metav1.Table, error) {
	raw, err := rawBody(t.request(t.clients.List, opts, include).Do(ctx))
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	table, err := decodeTable(raw)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	return table, nil
}

// remember keeps the first column definitions seen, so every row of the
// stream shares one slice and the printer prints one header.
func (t *tables) remember(cols []metav1.TableColumnDefinition) []metav1.TableColumnDefinition {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.columns == nil && len(cols) > 0 {
		t.columns = cols[:len(cols):len(cols)]
	}
	return t.columns
}

// watch reads a stream of one-row Tables with the pod inside each row.
func (t *tables) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	body, err := t.request(t.clients.Watch, opts, metav1.IncludeObject).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("watch pods: %w", err)
	}
	d := &tableDecoder{body: body, dec: json.NewDecoder(body), columns: t.current, lean: t.filter.Lean}
	return watch.NewStreamWatcher(d, d), nil
}

// current returns the column definitions known so far.
func (t *tables) current() []metav1.TableColumnDefinition {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.columns
}

func decodeTable(raw []byte) (*metav1.Table, error) {
	var table metav1.Table
	// utiljson keeps integer cells as int64, as kubectl's decoding does.
	if err := utiljson.Unmarshal(raw, &table); err != nil {
		return nil, fmt.Errorf("decode table: %w", err)
	}
	if table.Kind != "Table" {
		return nil, fmt.Errorf("the server answered with %q instead of a Table: it does not support server-side printing", table.Kind)
	}
	return &table, nil
}

// fillRow makes dst the row of a table row with its object, without
// managedFields unless kept.
func fillRow(dst *wire.PodRow, row *metav1.TableRow, columns []metav1.TableColumnDefinition, keepManagedFields bool) error {
	if len(row.Object.Raw) == 0 {
		return errors.New("the server sent a row without its object")
	}
	pod := &corev1.Pod{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(row.Object.Raw, pod); err != nil {
		return fmt.Errorf("decode pod: %w", err)
	}
	if !keepManagedFields {
		pod.ManagedFields = nil
	}
	*dst = *wire.RowOf(pod)
	dst.Cells, dst.Columns = row.Cells, columns
	return nil
}

// tableDecoder reads a watch stream of Table events and hands the reflector
// one PodRow per event.
type tableDecoder struct {
	body    io.ReadCloser
	dec     *json.Decoder
	columns func() []metav1.TableColumnDefinition
	lean    bool
}

type rawEvent struct {
	Type   watch.EventType `json:"type"`
	Object json.RawMessage `json:"object"`
}

// eventTable is a watch event's one-row table, decoded in a single pass
// with the pod typed, rather than as a generic Table whose row object is
// decoded again.
type eventTable struct {
	Kind string `json:"kind"`
	Rows []struct {
		Cells  []interface{} `json:"cells"`
		Object *corev1.Pod   `json:"object"`
	} `json:"rows"`
}

// Decode implements watch.Decoder.
func (d *tableDecoder) Decode() (watch.EventType, runtime.Object, error) {
	var ev rawEvent
	if err := d.dec.Decode(&ev); err != nil {
		return "", nil, err
	}
	if ev.Type == watch.Error {
		status := &metav1.Status{}
		if err := json.Unmarshal(ev.Object, status); err != nil {
			return "", nil, fmt.Errorf("decode watch error: %w", err)
		}
		return ev.Type, status, nil
	}
	var table eventTable
	// Integer cells stay int64, as in lists and in kubectl's decoding.
	if err := kjson.UnmarshalCaseSensitivePreserveInts(ev.Object, &table); err != nil {
		return "", nil, fmt.Errorf("decode watch event %s: %w", ev.Type, err)
	}
	switch {
	case table.Kind != "Table":
		return "", nil, fmt.Errorf("the server answered with %q instead of a Table: it does not support server-side printing", table.Kind)
	case len(table.Rows) != 1:
		return "", nil, fmt.Errorf("watch event %s has %d table rows, want 1", ev.Type, len(table.Rows))
	case table.Rows[0].Object == nil:
		return "", nil, errors.New("the server sent a row without its object")
	}
	row := wire.RowOf(table.Rows[0].Object)
	row.Cells, row.Columns = table.Rows[0].Cells, d.columns()
	if d.lean {
		wire.Lean(row)
	}
	return ev.Type, row, nil
}

// Close implements watch.Decoder.
func (d *tableDecoder) Close() { _ = d.body.Close() }

// AsObject implements watch.Reporter: a broken stream becomes an ERROR event
// the reflector understands.
func (d *tableDecoder) AsObject(err error) runtime.Object {
	status := apierrors.NewInternalError(err).ErrStatus
	status.Code = http.StatusInternalServerError
	return &status
}
