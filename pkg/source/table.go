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
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	kjson "sigs.k8s.io/json"
)

// TableAccept asks for server-side printing, as kubectl does for its
// human-readable output; the plain JSON fallback is there so that a server
// without tables answers with something we can name in an error.
const TableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io," +
	"application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

// Tables lists and watches pods as server-side Tables with the full object in
// each row (includeObject=Object), and unpacks one PodRow per table row: the
// reflector cannot store Tables, but it can store rows.
type Tables struct {
	// Client makes list requests; WatchClient makes watch requests and must
	// have no client-side timeout, since a watch is meant to stay open.
	Client, WatchClient rest.Interface
	Filter              Filter
	Reporter            Reporter

	mu      sync.Mutex
	columns []metav1.TableColumnDefinition
}

// IsWatchListSemanticsUnSupported opts out of streaming lists: their initial
// events end with a bookmark whose row carries only metadata.
func (t *Tables) IsWatchListSemanticsUnSupported() bool { return true }

// Columns returns the column definitions of the server's pod table, known
// after the first successful list.
func (t *Tables) Columns() []metav1.TableColumnDefinition {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.columns
}

func (t *Tables) request(c rest.Interface, opts metav1.ListOptions) *rest.Request {
	opts = t.Filter.apply(opts)
	req := c.Get().Resource("pods").
		VersionedParams(&opts, metav1.ParameterCodec).
		Param("includeObject", string(metav1.IncludeObject)).
		SetHeader("Accept", TableAccept)
	if t.Filter.Namespace != "" {
		req = req.Namespace(t.Filter.Namespace)
	}
	return req
}

// List implements cache.Lister.
func (t *Tables) List(opts metav1.ListOptions) (runtime.Object, error) {
	return t.ListWithContext(context.Background(), opts)
}

// ListWithContext implements cache.ListerWithContext.
func (t *Tables) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	list, err := t.list(ctx, opts)
	orNop(t.Reporter).Result("list", err)
	return list, err
}

func (t *Tables) list(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	raw, err := t.request(t.Client, opts).Do(ctx).Raw()
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	table, err := decodeTable(raw)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	columns := t.remember(table.ColumnDefinitions)
	out := &PodRowList{ListMeta: table.ListMeta, Items: make([]PodRow, len(table.Rows))}
	for i := range table.Rows {
		if err := fillRow(&out.Items[i], &table.Rows[i], columns); err != nil {
			return nil, fmt.Errorf("list pods: row %d: %w", i, err)
		}
	}
	return out, nil
}

// remember keeps the first column definitions seen, so every row of the
// stream shares one slice and the printer prints one header.
func (t *Tables) remember(cols []metav1.TableColumnDefinition) []metav1.TableColumnDefinition {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.columns == nil && len(cols) > 0 {
		t.columns = cols[:len(cols):len(cols)]
	}
	return t.columns
}

// Watch implements cache.Watcher.
func (t *Tables) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return t.WatchWithContext(context.Background(), opts)
}

// WatchWithContext implements cache.WatcherWithContext.
func (t *Tables) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	body, err := t.request(t.WatchClient, opts).Stream(ctx)
	orNop(t.Reporter).Result("watch", err)
	if err != nil {
		return nil, fmt.Errorf("watch pods: %w", err)
	}
	d := &tableDecoder{body: body, dec: json.NewDecoder(body), columns: t.Columns}
	return watch.NewStreamWatcher(d, d), nil
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

func fillRow(dst *PodRow, row *metav1.TableRow, columns []metav1.TableColumnDefinition) error {
	if len(row.Object.Raw) == 0 {
		return errors.New("the server sent a row without its object")
	}
	pod := &corev1.Pod{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(row.Object.Raw, pod); err != nil {
		return fmt.Errorf("decode pod: %w", err)
	}
	dst.Pod, dst.Cells, dst.Columns = pod, row.Cells, columns
	return nil
}

// tableDecoder reads a watch stream of Table events and hands the reflector
// one PodRow per event.
type tableDecoder struct {
	body    io.ReadCloser
	dec     *json.Decoder
	columns func() []metav1.TableColumnDefinition
}

type rawEvent struct {
	Type   watch.EventType `json:"type"`
	Object json.RawMessage `json:"object"`
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
	table, err := decodeTable(ev.Object)
	if err != nil {
		return "", nil, err
	}
	if len(table.Rows) != 1 {
		return "", nil, fmt.Errorf("watch event %s has %d table rows, want 1", ev.Type, len(table.Rows))
	}
	row := &PodRow{}
	if err := fillRow(row, &table.Rows[0], d.columns()); err != nil {
		return "", nil, err
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
