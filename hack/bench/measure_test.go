package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// No command may follow the same one in every round: a command measured
// right after `kubectl get pods -A` meets a busy API server, and that must
// not fall on one command every time.
func TestRoundOrderChangesEachCommandsPredecessor(t *testing.T) {
	const n, rounds = 12, 5
	before := make([]map[int]bool, n)
	for i := range before {
		before[i] = map[int]bool{}
	}
	for round := range rounds {
		order := roundOrder(round, n)
		if len(order) != n {
			t.Fatalf("round %d: %d commands ordered, want %d", round, len(order), n)
		}
		prev := -1
		for _, k := range order {
			before[k][prev] = true
			prev = k
		}
	}
	for k, preds := range before {
		if len(preds) == 1 {
			t.Errorf("command %d followed the same command in all %d rounds", k, rounds)
		}
	}
}

// -only selects the outputs of the -compare builds as it does this
// tree's: a table-only run measures no build's JSON.
func TestOnlySelectsCompareBuildsOutputs(t *testing.T) {
	cases := map[string]string{
		"podsync":              "[podsync podsync@PREV]",
		"podsync-json":         "[podsync-json podsync-json@PREV]",
		"podsync,podsync-json": "[podsync podsync-json podsync@PREV podsync-json@PREV]",
	}
	for only, want := range cases {
		cfg := &config{only: map[string]bool{}, compare: []build{{name: "PREV"}}}
		for _, id := range strings.Split(only, ",") {
			cfg.only[id] = true
		}
		var ids []string
		for _, c := range (&env{cfg: cfg}).selected() {
			ids = append(ids, c.id)
		}
		if got := fmt.Sprint(ids); got != want {
			t.Errorf("-only %s selected %s, want %s", only, got, want)
		}
	}
}

// podsync-bin runs the plugin's binary itself; podsync runs it through
// kubectl, whose start is the difference the two rows show.
func TestBinaryAloneSkipsKubectl(t *testing.T) {
	e := &env{kubectl: "/tools/kubectl"}
	if got, want := e.argv(byID(t, "podsync-bin")), []string{"kubectl-podsync", "-A", "--once"}; !slices.Equal(got, want) {
		t.Errorf("podsync-bin runs %q, want %q", got, want)
	}
	if got, want := e.argv(byID(t, "podsync")), []string{"/tools/kubectl", "podsync", "-A", "--once"}; !slices.Equal(got, want) {
		t.Errorf("podsync runs %q, want %q", got, want)
	}
}

// The table check leaves out what moves on between two commands: AGE, and
// the age of a pod's last restart in RESTARTS; the count itself is kept.
func TestTableRowsLeaveAgesOut(t *testing.T) {
	text := []byte("NAMESPACE   NAME   READY   RESTARTS          AGE\n" +
		"a           web    1/1     20 (3m52s ago)    5m\n" +
		"a           db     1/1     0                 1h\n")
	header, rows, err := tableRows(text, "AGE")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"NAMESPACE", "NAME", "READY", "RESTARTS"}; !slices.Equal(header, want) {
		t.Errorf("header %q, want %q", header, want)
	}
	if got, want := rows["a/web"], []string{"a", "web", "1/1", "20 (ago)"}; !slices.Equal(got, want) {
		t.Errorf("web %q, want %q", got, want)
	}
	if got := rows["a/db"][3]; got != "0" {
		t.Errorf("db restarts %q, want 0", got)
	}
}
