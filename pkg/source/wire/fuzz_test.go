package wire

import (
	"github.com/kubectl-podsync/kubectl-podsync/internal/podtest"

	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"
)

// The parsers of the server's bytes take any bytes without a panic: what
// they cannot read is an error, and every row they make can be read.

func podSeeds(f *testing.F) []corev1.Pod {
	f.Helper()
	p := *podtest.BenchPod()
	p.Annotations = map[string]string{"a": "1"}
	p.Finalizers = []string{"example.com/keep"}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}
	return []corev1.Pod{p, podtest.Pod("b", "web-2", "7")}
}

// readRow reads every representation of a row, as the run's readers do.
func readRow(t *testing.T, row *PodRow) {
	t.Helper()
	_ = row.Pod()
	_ = row.Meta()
	_ = row.Identity()
	if _, err := row.Whole(); err != nil {
		return
	}
	if _, err := row.Unpacked(); err != nil {
		t.Errorf("a row whose whole pod decodes did not unpack: %v", err)
	}
	if row.Raw != nil {
		var j PodJSON
		if out, ok := j.Append(nil, row); ok && !json.Valid(out) {
			t.Errorf("the JSON writer wrote invalid JSON: %s", out)
		}
	}
}

func FuzzDecodePod(f *testing.F) {
	for _, p := range podSeeds(f) {
		raw, err := p.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, c := range decoders {
			d := c.d
			row, err := d.DecodePod(raw)
			if err == nil {
				readRow(t, &row)
			}
		}
	})
}

func FuzzReadPodList(f *testing.F) {
	f.Add(encodeList(f, podSeeds(f)...))
	f.Add([]byte("k8s\x00"))
	f.Fuzz(func(t *testing.T, body []byte) {
		d := Decoder{Pack: true, Skip: func(*PodError) {}}
		_ = ReadList(bytes.NewReader(body), &d, func(metav1.ListMeta) {}, func(row PodRow) { readRow(t, &row) })
	})
}

func FuzzWatchFrames(f *testing.F) {
	pods := podSeeds(f)
	f.Add(podtest.EncodeWatch(f, watch.Event{Type: watch.Added, Object: &pods[0]}, watch.Event{Type: watch.Modified, Object: &pods[1]}))
	f.Add([]byte(`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}}}` + "\n"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		for _, c := range decoders {
			d := c.d
			d.Skip = func(*PodError) {}
			events := NewEvents(io.NopCloser(bytes.NewReader(stream)), &d)
			for range 16 {
				_, obj, err := events.Next()
				if err != nil {
					break
				}
				if row, ok := obj.(*PodRow); ok {
					readRow(t, row)
				}
			}
		}
	})
}

// FuzzTableCells: cells read from a table's bytes are exactly what the
// standard decoding (utiljson, as kubectl decodes) makes of them.
func FuzzTableCells(f *testing.F) {
	f.Add([]byte(`{"kind":"Table","columnDefinitions":[{"name":"Name"},{"name":"Ready"},{"name":"IP"}],"rows":[{"cells":["web-1","1/1","10.0.0.1",3,"\u003cnone\u003e"]}]}`))
	f.Add([]byte(`{"kind":"Table","columnDefinitions":[{"name":"Name"}],"rows":[{"cells":[1.5e3,-0,"a\"b",null,true,{"x":[1]}]}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		table, err := DecodeCellTable(raw)
		if err != nil {
			return
		}
		for _, r := range table.Rows {
			row := &PodRow{whole: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}}}
			if err := RowCells(row, r.Cells, table.ColumnDefinitions, nil); err != nil {
				continue
			}
			var want []any
			if err := utiljson.Unmarshal(r.Cells, &want); err != nil {
				t.Fatalf("cells read that the standard decoding refuses (%v): %s", err, r.Cells)
			}
			if len(want) == 0 && len(row.Cells) == 0 {
				continue
			}
			if !reflect.DeepEqual(row.Cells, want) {
				t.Errorf("cells %s read as %#v, the standard decoding reads %#v", r.Cells, row.Cells, want)
			}
		}
	})
}

// FuzzPodJSON: the JSON written from a packed row's bytes is, whenever
// the writer writes it, exactly what encoding/json writes of the pod
// decoded from the same bytes.
func FuzzPodJSON(f *testing.F) {
	for _, p := range podSeeds(f) {
		raw, err := p.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var j PodJSON
		for _, keep := range []bool{false, true} {
			row, err := (&Decoder{Pack: true, KeepManagedFields: keep}).DecodePod(raw)
			if err != nil {
				continue
			}
			got, ok := j.Append(nil, &row)
			if !ok {
				continue
			}
			whole, err := row.Whole()
			if err != nil {
				t.Fatalf("JSON written from bytes whose pod does not decode (%v): %s", err, got)
			}
			want, err := json.Marshal(whole)
			if err != nil {
				t.Fatalf("encoding/json refuses the pod whose JSON was written: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the JSON writer wrote\n%s\nencoding/json writes\n%s", got, want)
			}
		}
	})
}
