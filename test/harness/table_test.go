package harness

import (
	"reflect"
	"testing"
)

func TestParseTable(t *testing.T) {
	text := "EVENT   NAME   NOMINATED NODE   CHANGES\n" +
		"SYNC    a      <none>\n" +
		"UPDATE  b      <none>           STATUS:Pending→Running READY:0/1→1/1\n"
	got, err := ParseTable(text)
	if err != nil {
		t.Fatal(err)
	}
	want := Table{
		Header: []string{"EVENT", "NAME", "NOMINATED NODE", "CHANGES"},
		Rows: [][]string{
			{"SYNC", "a", "<none>", ""},
			{"UPDATE", "b", "<none>", "STATUS:Pending→Running READY:0/1→1/1"},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v\nwant %#v", got, want)
	}
	if w := got.Without("EVENT", "CHANGES"); !reflect.DeepEqual(w.Header, []string{"NAME", "NOMINATED NODE"}) || w.Rows[1][0] != "b" {
		t.Errorf("Without: %#v", w)
	}
}

func TestParseTableRejectsShiftedColumns(t *testing.T) {
	for _, text := range []string{
		"NAME   READY\nlonger-name 1/1\n",
		"NAME   READY\na       1/1\n",
	} {
		if _, err := ParseTable(text); err == nil {
			t.Errorf("accepted a misaligned table:\n%s", text)
		}
	}
}
