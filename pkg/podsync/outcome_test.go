package podsync_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
)

func TestExitCodes(t *testing.T) {
	cases := []struct {
		o    podsync.Outcome
		want int
	}{
		{podsync.Outcome{Verdict: podsync.Done}, 0},
		{podsync.Outcome{Verdict: podsync.Met}, 0},
		{podsync.Outcome{Verdict: podsync.NotMet}, 3},
		{podsync.Outcome{Verdict: podsync.Failed}, 4},
		{podsync.Outcome{Verdict: podsync.Broken, Err: errors.New("refused")}, 1},
		{podsync.Outcome{Verdict: podsync.Broken, Err: podsync.UsageError{Err: errors.New("bad")}}, 2},
		{podsync.Outcome{Verdict: podsync.Interrupted, Signal: syscall.SIGINT}, 130},
		{podsync.Outcome{Verdict: podsync.Interrupted, Signal: syscall.SIGTERM}, 143},
		{podsync.Outcome{Verdict: podsync.Interrupted, Signal: syscall.SIGHUP}, 129},
	}
	for _, c := range cases {
		if got := c.o.ExitCode(); got != c.want {
			t.Errorf("%v (%v): exit %d, want %d", c.o.Verdict, c.o.Err, got, c.want)
		}
	}
}
