package podsync_test

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/output"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
)

// runCase is one library run against a sim.
type runCase struct {
	args  []string // print flags
	until string
	once  bool
	sort  string
	// out, when set, replaces the stdout buffer.
	out     io.Writer
	timeout time.Duration
}

// runSim runs podsync against sim with the case's flags; it returns the
// outcome and what was written.
func runSim(t *testing.T, sim *sim, c runCase) (podsync.Outcome, string, string) {
	t.Helper()
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	var out io.Writer = stdout
	if c.out != nil {
		out = c.out
	}
	pf := get.NewGetPrintFlags()
	cmd := &cobra.Command{}
	pf.AddFlags(cmd)
	if err := cmd.ParseFlags(c.args); err != nil {
		t.Fatal(err)
	}
	w, err := output.New(output.Options{PrintFlags: pf, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	flags := check.Flags{MinPods: check.Unset, MaxRestarts: check.Unset, Until: c.until, UntilSet: c.until != ""}
	spec, err := flags.Spec()
	if err != nil {
		t.Fatal(err)
	}
	cfg := podsync.Config{
		Scope:  podsync.Scope{Namespace: "a"},
		Output: w, Stdout: out, ErrOut: stderr, Check: spec, Once: c.once, SortBy: c.sort,
		Timeout: c.timeout, Workers: 2, MaxRetries: 3,
		JSONSummary: len(c.args) > 1 && c.args[1] == "json",
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o := podsync.Run(ctx, cfg, podsync.Cluster{Source: sim.source()})
	return o, stdout.String(), stderr.String()
}

func simWith(table bool, states map[string]podState) *sim {
	s := newSim(table)
	for name, st := range states {
		s.put(newSimPod("a", name, 1, st, ""))
	}
	return s
}

// Judging never depends on printing: a pod whose message
// the template cannot print is still judged, and its print failure is
// said on stderr. Before, the message was retried, dropped and never
// judged, and this check exited 0.
func TestUnprintablePodIsJudged(t *testing.T) {
	s := simWith(false, map[string]podState{"ok": runningReady, "stuck": runningNotReady})
	o, stdout, stderr := runSim(t, s, runCase{
		args:  []string{"--allow-missing-template-keys=false", "-o", `go-template={{.metadata.name}}{{.metadata.annotations.printable}}{{"\n"}}`},
		until: "ready", timeout: 500 * time.Millisecond,
	})
	if o.Verdict != podsync.NotMet || o.ExitCode() != podsync.ExitNotMet {
		t.Errorf("verdict %v (exit %d), want not met (3): the pod that could not be printed is not ready", o.Verdict, o.ExitCode())
	}
	if stdout != "ok\n" {
		t.Errorf("stdout %q, want only the printable pod", stdout)
	}
	re := regexp.MustCompile(`(?m)^error: print SYNC a/stuck: .*"printable".*$`)
	if n := len(re.FindAllString(stderr, -1)); n != 1 {
		t.Errorf("%d print errors for a/stuck on stderr, want 1:\n%s", n, stderr)
	}
	if !strings.Contains(stderr, "Pod a/stuck is not satisfied") {
		t.Errorf("the explanation does not name the pod:\n%s", stderr)
	}
}

// A message is printed and counted at most once (row 3): a pod deleted and
// created again while the watch was down comes as GONE (old) and ADD (new)
// in one batch; the ADD cannot be printed, and the GONE is printed once,
// not again on a retry of the batch.
func TestBatchPrintedOnce(t *testing.T) { synctest.Test(t, testBatchPrintedOnce) }

func testBatchPrintedOnce(t *testing.T) {
	s := simWith(false, map[string]podState{"p": runningReady})
	done := make(chan struct{})
	var o podsync.Outcome
	var stdout, stderr string
	go func() {
		defer close(done)
		o, stdout, stderr = runSim(t, s, runCase{
			args:    []string{"--allow-missing-template-keys=false", "-o", `go-template={{.metadata.name}} {{.metadata.labels.inc}}{{.metadata.annotations.printable}}{{"\n"}}`},
			timeout: 2500 * time.Millisecond,
		})
	}()
	<-s.listed
	// The SYNC is printed and the run watches for what follows.
	synctest.Wait()
	s.compact()
	s.remove("a/p")
	s.put(newSimPod("a", "p", 2, runningNotReady, ""))
	s.cut()
	<-done
	if stdout != "p 1\np 1\n" {
		t.Errorf("stdout %q, want the SYNC and the GONE of incarnation 1, once each", stdout)
	}
	if !regexp.MustCompile(`(?m)^error: print ADD a/p: `).MatchString(stderr) ||
		!strings.Contains(stderr, "Events:   SYNC 1, ADD 1, UPDATE 0, GONE 1") {
		t.Errorf("stderr does not report the ADD that failed, or miscounts:\n%s", stderr)
	}
	if o.ExitCode() != podsync.ExitOK {
		t.Errorf("exit %d, want 0 (a stream ended at --timeout)", o.ExitCode())
	}
}

// brokenPipe is a stdout whose reader has gone.
type brokenPipe struct{}

func (brokenPipe) Write([]byte) (int, error) { return 0, syscall.EPIPE }

// A check whose stdout is closed keeps judging and ends with its verdict
// (row 7); a plain stream ends quietly with 0. Before, a check exited 141.
func TestClosedStdout(t *testing.T) {
	cases := []struct {
		name   string
		states map[string]podState
		c      runCase
		want   podsync.Verdict
	}{
		{"a plain stream ends", map[string]podState{"p": runningNotReady}, runCase{}, podsync.Done},
		{"a check is met", map[string]podState{"p": runningReady}, runCase{until: "ready"}, podsync.Met},
		{"a check is not met at its timeout", map[string]podState{"p": runningNotReady}, runCase{until: "ready", timeout: 300 * time.Millisecond}, podsync.NotMet},
		{"a check fails", map[string]podState{"p": crashLooping}, runCase{until: "ready"}, podsync.Failed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.out = brokenPipe{}
			o, _, stderr := runSim(t, simWith(false, tc.states), tc.c)
			if o.Verdict != tc.want {
				t.Errorf("verdict %v, want %v\n%s", o.Verdict, tc.want, stderr)
			}
			if tc.want == podsync.Done && stderr != "" {
				t.Errorf("a plain stream whose reader went away said %q, want nothing", stderr)
			}
		})
	}
}

// --once without --until prints the list and no summary (row 10); with
// --until, the summary stays.
func TestOnceSummary(t *testing.T) {
	s := simWith(true, map[string]podState{"p": runningReady})
	if _, stdout, stderr := runSim(t, s, runCase{once: true}); stderr != "" || !strings.Contains(stdout, "SYNC") {
		t.Errorf("--once: stdout %q, stderr %q; want the SYNC row and no summary", stdout, stderr)
	}
	if o, _, stderr := runSim(t, s, runCase{once: true, until: "ready"}); o.Verdict != podsync.Met || !strings.HasPrefix(stderr, "Verdict:  met (exit 0)") {
		t.Errorf("--once --until ready: %v, stderr %q", o.Verdict, stderr)
	}
}

// --once on a namespace without pods says so on stderr, as kubectl get
// does, and prints nothing on stdout, not even a header.
func TestOnceWithoutPods(t *testing.T) {
	for _, args := range [][]string{nil, {"-o", "json"}, {"-o", "name"}} {
		o, stdout, stderr := runSim(t, newSim(args == nil), runCase{args: args, once: true})
		if o.ExitCode() != podsync.ExitOK || stdout != "" || stderr != "No resources found in a namespace.\n" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 0, nothing, kubectl's line", args, o.ExitCode(), stdout, stderr)
		}
	}
	if _, _, stderr := runSim(t, newSim(true), runCase{once: true, until: "ready"}); strings.Contains(stderr, "No resources") {
		t.Errorf("--until has its summary; it said besides:\n%s", stderr)
	}
}

// With non-table outputs the summary counts kubectl's STATUS, not the
// phase (row 6): a crash-looping pod is CrashLoopBackOff, not Running.
func TestJSONSummaryCountsKubectlStatus(t *testing.T) {
	s := simWith(false, map[string]podState{"crash": crashLooping})
	o, _, stderr := runSim(t, s, runCase{args: []string{"-o", "json"}, until: "ready"})
	if o.Verdict != podsync.Failed {
		t.Fatalf("verdict %v, want failed", o.Verdict)
	}
	if !strings.Contains(stderr, "Pods:     1 matched (CrashLoopBackOff 1)") ||
		!strings.Contains(stderr, `"statuses":{"CrashLoopBackOff":1}`) {
		t.Errorf("summary statuses are not kubectl's:\n%s", stderr)
	}
}

// --once shows and judges the listed state only: changes that the watch
// brings while the list is still being judged are after it. Before, a
// pod changed right after the list was printed a second time as UPDATE,
// and the check judged the newer state.
func TestOnceShowsTheListedState(t *testing.T) {
	for _, pageSize := range []int{0, 50} {
		s := newSim(true)
		s.pageSize = pageSize
		var keys []string
		for i := range 300 {
			p := newSimPod("a", fmt.Sprintf("p%03d", i), 1, runningNotReady, "")
			s.put(p)
			keys = append(keys, "a/"+p.Name)
		}
		var once sync.Once
		s.afterList = func() {
			once.Do(func() {
				for _, k := range keys {
					p := s.get(k)
					setState(p, runningReady)
					s.put(p)
				}
			})
		}
		o, stdout, _ := runSim(t, s, runCase{once: true, until: "ready"})
		rows := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")[1:]
		if len(rows) != len(keys) {
			t.Errorf("pages of %d: %d rows, want %d:\n%s", pageSize, len(rows), len(keys), stdout)
		}
		for _, row := range rows {
			if !strings.HasPrefix(row, "SYNC ") {
				t.Fatalf("pages of %d: row %q: --once prints SYNC rows only", pageSize, row)
			}
		}
		if o.Verdict != podsync.NotMet {
			t.Errorf("pages of %d: verdict %v, want not met: the listed pods are not ready", pageSize, o.Verdict)
		}
	}
}

// A failure that ends a --sort-by run before its initial list is complete
// still shows the pods judged so far, sorted, the failing one among them.
// Before, they were held back for sorting and never printed.
func TestSortedListCutShortByAFailureIsShown(t *testing.T) {
	states := map[string]podState{"crash": crashLooping}
	for i := range 300 {
		states[fmt.Sprintf("p%03d", i)] = runningReady
	}
	o, stdout, _ := runSim(t, simWith(true, states), runCase{until: "ready", sort: "{.metadata.name}"})
	if o.Verdict != podsync.Failed {
		t.Fatalf("verdict %v, want failed", o.Verdict)
	}
	if !regexp.MustCompile(`(?m)^SYNC\s+crash\s+0/1\s+CrashLoopBackOff\s`).MatchString(stdout) {
		t.Errorf("the failing pod's row is not shown:\n%s", stdout)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n")[1:] {
		names = append(names, strings.Fields(line)[1])
	}
	if !slices.IsSorted(names) {
		t.Errorf("rows not sorted by name: %v", names)
	}
}

// A failed check explains the failing pod in the state that failed it,
// not in a newer one the informer holds already (a crash-looping
// container restarted and running again). CI saw such an explanation:
// "running" under a CrashLoopBackOff verdict.
func TestFailureExplainedInTheStateThatFailed(t *testing.T) {
	s := simWith(true, map[string]podState{"crash": crashLooping})
	var once sync.Once
	s.afterList = func() {
		once.Do(func() {
			p := s.get("a/crash")
			setState(p, runningNotReady)
			s.put(p)
		})
	}
	o, _, stderr := runSim(t, s, runCase{until: "ready"})
	if o.Verdict != podsync.Failed {
		t.Fatalf("verdict %v, want failed", o.Verdict)
	}
	if !strings.Contains(stderr, "waiting (CrashLoopBackOff") {
		t.Errorf("the explanation does not show the state that failed the check:\n%s", stderr)
	}
}
