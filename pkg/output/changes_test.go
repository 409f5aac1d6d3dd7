package output

import (
	"testing"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

func TestChanges(t *testing.T) {
	withLabel := func(r *wire.PodRow, k, v string) *wire.PodRow {
		r.Meta().Labels[k] = v
		return r
	}
	restarted := func(r *wire.PodRow, cell string) *wire.PodRow {
		r.Cells[3] = cell
		return r
	}
	cases := []struct {
		name      string
		prev, cur *wire.PodRow
		wide      bool
		labels    []string
		want      string
	}{
		{"visible cells", row("a", "0/1", "Pending", "0", "<none>", "1"), row("a", "1/1", "Running", "0", "<none>", "2"), false, nil,
			"READY:0/1→1/1 STATUS:Pending→Running"},
		{"wide cells only with -o wide", row("a", "1/1", "Running", "0", "<none>", "1"), row("a", "1/1", "Running", "0", "10.0.0.1", "2"), false, nil,
			"status.podIP"},
		{"wide cell", row("a", "1/1", "Running", "0", "<none>", "1"), row("a", "1/1", "Running", "0", "10.0.0.1", "2"), true, nil,
			"IP:<none>→10.0.0.1"},
		{"restart age alone is no change", restarted(row("a", "1/1", "Running", "", "", "1"), "1 (5s ago)"), restarted(row("a", "1/1", "Running", "", "", "2"), "1 (9s ago)"), false, nil,
			""},
		{"restart count", restarted(row("a", "1/1", "Running", "", "", "1"), "1 (5s ago)"), restarted(row("a", "1/1", "Running", "", "", "2"), "2 (0s ago)"), false, nil,
			"RESTARTS:1→2"},
		{"hidden label", row("a", "1/1", "Running", "0", "", "1"), withLabel(row("a", "1/1", "Running", "0", "", "2"), "count", "1"), false, nil,
			"metadata.labels"},
		{"-L label column", row("a", "1/1", "Running", "0", "", "1"), withLabel(row("a", "1/1", "Running", "0", "", "2"), "count", "1"), false, []string{"example.com/count", "count"},
			"COUNT:<none>→1"},
		{"-L label and a cell", withLabel(row("a", "0/1", "Pending", "0", "", "1"), "app.kubernetes.io/version", "1"), withLabel(row("a", "1/1", "Pending", "0", "", "2"), "app.kubernetes.io/version", "2"), false, []string{"app.kubernetes.io/version"},
			"READY:0/1→1/1 VERSION:1→2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Changes(c.prev, c.cur, c.wide, c.labels); got != c.want {
				t.Errorf("Changes = %q, want %q", got, c.want)
			}
		})
	}
}
