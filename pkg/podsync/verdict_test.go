package podsync

import (
	"testing"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// The verdict over several clusters, as a table: a failure anywhere fails
// it; it is met only when every cluster left is met and connected; a
// cluster given up fails a check the others meet, once their lists are in.
func TestVerdictOver(t *testing.T) {
	met := clusterState{state: check.Met}
	pending := clusterState{state: check.Pending}
	failed := clusterState{state: check.Failed}
	lost := clusterState{state: check.Met, lost: true}
	skipped := clusterState{skipped: true}
	for _, c := range []struct {
		name       string
		clusters   []clusterState
		allInitial bool
		want       check.State
	}{
		{"one met", []clusterState{met}, true, check.Met},
		{"all met", []clusterState{met, met, met}, true, check.Met},
		{"one pending", []clusterState{met, pending}, true, check.Pending},
		{"one failed among pending", []clusterState{pending, failed}, false, check.Failed},
		{"met but disconnected", []clusterState{met, lost}, true, check.Pending},
		{"failed while another is lost", []clusterState{lost, failed}, true, check.Failed},
		{"skipped, the others met", []clusterState{met, skipped}, true, check.Failed},
		{"skipped, the others met, lists not all in", []clusterState{met, skipped}, false, check.Pending},
		{"skipped, another pending", []clusterState{pending, skipped}, true, check.Pending},
		{"every cluster skipped", []clusterState{skipped, skipped}, true, check.Failed},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := verdictOver(c.clusters, func() bool { return c.allInitial }); got != c.want {
				t.Errorf("verdict %v, want %v", got, c.want)
			}
		})
	}
}
