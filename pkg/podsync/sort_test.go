package podsync_test

import (
	"strings"
	"testing"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
)

// --sort-by orders the initial SYNC block as kubectl get --sort-by orders
// its list; a field whose values cannot be ordered is a usage error.
func TestSortBy(t *testing.T) {
	s := newSim(true)
	for i, name := range []string{"c", "a", "b"} {
		p := newSimPod("a", name, 1, runningReady, "")
		p.Annotations["order"] = []string{"1", "3", "2"}[i]
		s.put(p)
	}
	_, stdout, _ := runSim(t, s, runCase{args: []string{"-o", "name"}, once: true, sort: "{.metadata.annotations.order}"})
	if stdout != "pod/c synced\npod/b synced\npod/a synced\n" {
		t.Errorf("sorted by the order annotation: %q", stdout)
	}
	o, stdout, stderr := runSim(t, s, runCase{once: true, sort: "{.metadata.labels}"})
	if o.ExitCode() != podsync.ExitUsage || !strings.Contains(o.Err.Error(), "cannot sort by a map") || stdout != "" || stderr != "" {
		t.Errorf("sort by a map: exit %d (%v), stdout %q, stderr %q; want exit 2 with the reason", o.ExitCode(), o.Err, stdout, stderr)
	}
	if err := podsync.ValidSortBy("{.metadata.name"); err == nil {
		t.Error("an unclosed JSONPath is accepted")
	}
}
