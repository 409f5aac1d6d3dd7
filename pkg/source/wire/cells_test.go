package wire

import (
	"github.com/kubectl-podsync/kubectl-podsync/internal/podtest"

	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// TestCellsReadAsTheStandardDecodingReadsThem gives pods cells of every
// kind JSON has, as the server would write them, and requires each row's
// cells to equal, value and type, what the standard decoding with integers
// kept (utiljson) gives, however they were read.
func TestCellsReadAsTheStandardDecodingReadsThem(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"", "Running", "1/1", "<none>", "a&b", `quote " and \ back`, "tab\there", "line\nbreak", "ünïcödé ✓", "\u2028", "emoji 🚀", "\x01ctl", strings.Repeat("long", 40)}
	cell := func() any {
		switch r.IntN(9) {
		case 0:
			return r.Int64() - math.MaxInt64/2
		case 1:
			return []int64{0, -1, math.MaxInt64, math.MinInt64}[r.IntN(4)]
		case 2:
			return []float64{1.5, 1e300, -0.25, 1e21, float64(math.MaxInt64) * 4}[r.IntN(5)]
		case 3:
			return r.IntN(2) == 0
		case 4:
			return nil
		case 5:
			return map[string]any{"k": words[r.IntN(len(words))]}
		default:
			return words[r.IntN(len(words))] + []string{"", fmt.Sprint(r.IntN(3))}[r.IntN(2)]
		}
	}
	for round := range 200 {
		table := metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}, ColumnDefinitions: podtest.Columns}
		rows := make([]PodRow, 1+r.IntN(20))
		for i := range rows {
			name := fmt.Sprintf("pod-%d", i)
			if r.IntN(4) == 0 {
				name = "pod<" + name + ">" // the server escapes it
			}
			rows[i] = *RowOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}})
			cells := []any{name}
			for range r.IntN(len(podtest.Columns) + 2) {
				cells = append(cells, cell())
			}
			table.Rows = append(table.Rows, metav1.TableRow{Cells: cells})
		}
		raw, err := json.Marshal(table)
		if err != nil {
			t.Fatal(err)
		}
		var want metav1.Table
		if err := utiljson.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		got, err := DecodeCellTable(raw)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			if err := RowCells(&rows[i], got.Rows[i].Cells, podtest.Columns, nil); err != nil {
				t.Fatalf("round %d, row %d: %v", round, i, err)
			}
		}
		for i := range rows {
			if !reflect.DeepEqual(rows[i].Cells, want.Rows[i].Cells) {
				t.Fatalf("round %d, row %d: cells %#v, want %#v (from %s)", round, i, rows[i].Cells, want.Rows[i].Cells, got.Rows[i].Cells)
			}
		}
	}
}

// TestCellsShareTheirWords checks that the words pods repeat are one copy,
// and that a pod's name and IP are not kept among the shared words.
func TestCellsShareTheirWords(t *testing.T) {
	raw := []byte(`["web-0","1/1","Running",3,"\u003cnone\u003e","10.1.2.3"]`)
	columns := []metav1.TableColumnDefinition{{Name: "Name"}, {Name: "Ready"}, {Name: "Status"}, {Name: "Restarts"}, {Name: "Nominated Node"}, {Name: "IP"}}
	a, b := RowOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0"}}), RowOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0"}})
	for _, row := range []*PodRow{a, b} {
		if err := RowCells(row, raw, columns, nil); err != nil {
			t.Fatal(err)
		}
	}
	want := []any{"web-0", "1/1", "Running", int64(3), "<none>", "10.1.2.3"}
	if !reflect.DeepEqual(a.Cells, want) {
		t.Fatalf("cells %#v, want %#v", a.Cells, want)
	}
	if unsafeData(a.Cells[0].(string)) != unsafeData(a.Meta().Name) {
		t.Error("the Name cell does not share the pod's name")
	}
	for _, i := range []int{1, 2, 4} {
		if unsafeData(a.Cells[i].(string)) != unsafeData(b.Cells[i].(string)) {
			t.Errorf("cell %d (%q) is two copies, want one shared", i, a.Cells[i])
		}
	}
	internedJSON.Lock()
	defer internedJSON.Unlock()
	for _, own := range []string{`"web-0"`, `"10.1.2.3"`} {
		if _, kept := internedJSON.m[own]; kept {
			t.Errorf("%s is kept among the shared words", own)
		}
	}
}
