package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
)

// outputKind is what a command prints on stdout.
type outputKind int

const (
	outNone     outputKind = iota // nothing (the floor)
	outTable                      // a header line, then one row per pod
	outLines                      // one line per pod, no header
	outDocument                   // one document (kubectl -o json): no rows to time
)

// command is one measured client.
type command struct {
	id    string
	label string
	// floor holds the floor client's flags (hack/bench/floor) when it runs
	// instead of kubectl.
	floor []string
	// program, when set, runs instead of kubectl.
	program string
	args    []string
	out     outputKind
	// bytes marks a byte floor (hack/bench/floor -bytes): the bytes the
	// server must send, read and thrown away. It anchors its own ratios and
	// is never the floor of the decoding clients.
	bytes bool
	// perK and fixed (MiB) guess the peak RSS at a size no smaller size of
	// the run has measured yet: fixed + perK per 1,000 pods (see guard.go).
	perK, fixed float64
}

func (c command) isFloor() bool { return c.floor != nil }

// The floor variants read every pod with the least work a client can do,
// in each way the server offers; the fastest at a size is that size's
// floor.
var commands = []command{
	{id: "floor-500", label: "floor: protobuf LIST, pages of 500", floor: []string{"-page", "500"}, fixed: 80},
	{id: "floor-1000", label: "floor: protobuf LIST, pages of 1,000", floor: []string{"-page", "1000"}, fixed: 80},
	{id: "floor-5000", label: "floor: protobuf LIST, pages of 5,000", floor: []string{"-page", "5000"}, perK: 0.5, fixed: 150},
	{id: "floor-10000", label: "floor: protobuf LIST, pages of 10,000", floor: []string{"-page", "10000"}, perK: 0.5, fixed: 250},
	{id: "floor-all", label: "floor: protobuf LIST, unpaginated", floor: []string{"-page", "0"}, perK: 30, fixed: 50},
	{id: "floor-watchlist", label: "floor: protobuf WatchList stream", floor: []string{"-watchlist"}, fixed: 80},
	// The byte floors: what the server must send, in pages of 5,000 read
	// to their end and thrown away, only the continue token decoded.
	{id: "bytes-pods", label: "pods floor: protobuf pods, pages of 5,000, bytes read and dropped", floor: []string{"-bytes", "-page", "5000"}, bytes: true, fixed: 80},
	{id: "bytes-table", label: "table floor: the Table kubectl prints (cells only), pages of 5,000, bytes read and dropped", floor: []string{"-bytes", "-table", "-page", "5000"}, bytes: true, fixed: 80},
	// The table floor with each row's metadata: what a table read from the
	// Table alone, without the pods, would cost the server at least.
	{id: "bytes-table-metadata", label: "table floor with each pod's metadata (includeObject=Metadata), pages of 5,000, bytes read and dropped", floor: []string{"-bytes", "-table", "-include", "Metadata", "-page", "5000"}, bytes: true, fixed: 80},
	{id: "kubectl", label: "`kubectl get pods -A`", args: []string{"get", "pods", "-A"}, out: outTable, perK: 70, fixed: 40},
	{id: "kubectl-json", label: "`kubectl get pods -A -o json`", args: []string{"get", "pods", "-A", "-o", "json"}, out: outDocument, perK: 160, fixed: 600},
	{id: "podsync", label: "`kubectl podsync -A --once`", args: []string{"podsync", "-A", "--once"}, out: outTable, perK: 25, fixed: 40},
	{id: "podsync-json", label: "`kubectl podsync -A --once -o json`", args: []string{"podsync", "-A", "--once", "-o", "json"}, out: outLines, perK: 25, fixed: 60},
	// The plugin's binary run directly: what kubectl's own start adds to
	// `kubectl podsync` is the difference, a large part of it at small sizes.
	{id: "podsync-bin", label: "`kubectl-podsync -A --once` (the binary alone, without kubectl)", program: "kubectl-podsync", args: []string{"-A", "--once"}, out: outTable, perK: 25, fixed: 40},
}

// commandByID is the command with id, or nil.
func commandByID(id string) *command {
	for i := range commands {
		if commands[i].id == id {
			return &commands[i]
		}
	}
	return nil
}

func commandIDs() []string {
	var ids []string
	for _, c := range commands {
		ids = append(ids, c.id)
	}
	return ids
}

// sample is one finished run of one command.
type sample struct {
	wall, cpu time.Duration
	maxRSS    int64 // bytes
	code      int
	// firstRow is when the first row reached stdout (-1: no row).
	firstRow          time.Duration
	outBytes, outLine int64
	// apiIdle and apiPeak are the API server's resident set before the
	// client started and its peak while it ran (bytes; -1: not measured).
	apiIdle, apiPeak int64
	// apiCPU is the CPU time the API server used while the client ran
	// (-1: not measured).
	apiCPU time.Duration
	stderr string // its end
}

// cmdResult is every run of one command at one size.
type cmdResult struct {
	cmd     command
	samples []sample
	// skipped says why the command was not run at this size.
	skipped string
}

func (r *cmdResult) wall() stat {
	return statOf(r.samples, func(s sample) float64 { return s.wall.Seconds() })
}
func (r *cmdResult) cpu() stat {
	return statOf(r.samples, func(s sample) float64 { return s.cpu.Seconds() })
}
func (r *cmdResult) rss() stat {
	return statOf(r.samples, func(s sample) float64 { return float64(s.maxRSS) / (1 << 20) })
}
func (r *cmdResult) apiCPU() stat {
	return statOf(r.samples, func(s sample) float64 { return s.apiCPU.Seconds() })
}
func (r *cmdResult) firstRow() stat {
	return statOf(r.samples, func(s sample) float64 { return s.firstRow.Seconds() })
}

func (r *cmdResult) measured() bool { return len(r.samples) > 0 }

// stat is the median and the spread of one number over the runs.
type stat struct{ median, min, max float64 }

func statOf(samples []sample, f func(sample) float64) stat {
	v := make([]float64, len(samples))
	for i, s := range samples {
		v[i] = f(s)
	}
	return statOfValues(v)
}

// statOfValues sorts v in place.
func statOfValues(v []float64) stat {
	if len(v) == 0 {
		return stat{}
	}
	slices.Sort(v)
	m := v[len(v)/2]
	if len(v)%2 == 0 {
		m = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return stat{median: m, min: v[0], max: v[len(v)-1]}
}

func (e *env) selected() []command {
	var out []command
	for _, c := range commands {
		if c.id == "floor-watchlist" && e.watchList != "" {
			continue
		}
		if e.cfg.only == nil || e.cfg.only[c.id] {
			out = append(out, c)
		}
	}
	// Each -compare build runs as its own plugin, kubectl-podsyncNAME,
	// in the outputs -only selects.
	for _, b := range e.cfg.compare {
		for _, c := range []command{
			{id: "podsync@" + b.name, label: "`kubectl podsync -A --once`, build " + b.name,
				args: []string{"podsync" + b.name, "-A", "--once"}, out: outTable, perK: 40, fixed: 60},
			{id: "podsync-json@" + b.name, label: "`kubectl podsync -A --once -o json`, build " + b.name,
				args: []string{"podsync" + b.name, "-A", "--once", "-o", "json"}, out: outLines, perK: 40, fixed: 60},
		} {
			if e.cfg.only == nil || e.cfg.only[baseID(c.id)] {
				out = append(out, c)
			}
		}
	}
	return out
}

// baseID is the command a -compare build's command stands for.
func baseID(id string) string {
	base, _, _ := strings.Cut(id, "@")
	return base
}

// measureCommands leaves out the commands that would not fit in memory,
// checks the output once, then runs every command cfg.runs times,
// alternating them in a new order each round. The order is shuffled, not
// rotated: a rotation keeps each command behind the same one every round,
// and the command after `kubectl get pods -A` met, every time, an API server
// still collecting the gigabyte that kubectl made it allocate.
func (e *env) measureCommands(ctx context.Context, res *sizeResult) error {
	pods := res.pods
	all := e.selected()
	results := make([]*cmdResult, len(all))
	res.commands = results
	var cmds []*cmdResult
	for i, c := range all {
		results[i] = &cmdResult{cmd: c, skipped: e.wontFit(c, pods)}
		if results[i].skipped != "" {
			e.logf("  %d pods: %s skipped: %s", pods, c.id, results[i].skipped)
			continue
		}
		cmds = append(cmds, results[i])
	}
	if e.cfg.check {
		var err error
		if res.notes, err = e.checkOutput(ctx, pods, results); err != nil {
			return err
		}
	}
	if e.cfg.warmup {
		for _, r := range cmds {
			if _, err := e.measureOnce(ctx, r.cmd, pods); err != nil {
				return err
			}
		}
	}
	for round := range e.cfg.runs {
		for _, k := range roundOrder(round, len(cmds)) {
			r := cmds[k]
			s, err := e.measureOnce(ctx, r.cmd, pods)
			if err != nil {
				return err
			}
			r.samples = append(r.samples, s)
			e.logf("  %d pods, run %d/%d: %-15s wall %6.2fs  cpu %6.2fs  maxrss %5.0f MiB  first row %s",
				pods, round+1, e.cfg.runs, r.cmd.id, s.wall.Seconds(), s.cpu.Seconds(), float64(s.maxRSS)/(1<<20), seconds(s.firstRow))
		}
	}
	return nil
}

// roundOrder is the order of n commands in a round: shuffled, and seeded so
// that a rerun measures in the same orders.
func roundOrder(round, n int) []int {
	return rand.New(rand.NewPCG(uint64(round), 16)).Perm(n)
}

func seconds(d time.Duration) string {
	if d < 0 {
		return "—"
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// measureOnce runs c with its stdout read and counted by spawn and checks
// that it printed every pod.
func (e *env) measureOnce(ctx context.Context, c command, pods int) (sample, error) {
	if e.live != nil {
		if err := e.live.touch(ctx); err != nil {
			return sample{}, err
		}
	}
	s, err := e.runCommand(ctx, c, nil, nil)
	if err != nil {
		return s, err
	}
	return s, verifyOutput(c, pods, s)
}

// verifyOutput makes sure a measured run did all the work: the floor
// counted every pod, a table printed a header and a row per pod.
func verifyOutput(c command, pods int, s sample) error {
	var want int64
	switch {
	case c.isFloor():
		if got := lastLine(s.stderr); got != fmt.Sprintf("pods: %d", pods) {
			return fmt.Errorf("%s said %q, want pods: %d", c.id, got, pods)
		}
		return nil
	case c.out == outTable:
		want = int64(pods) + 1
	case c.out == outLines:
		want = int64(pods)
	case c.out == outDocument:
		// A pod is several KB of JSON: 1 KB a pod is a floor no complete
		// list stays under.
		if s.outBytes < int64(pods)*1000 {
			return fmt.Errorf("%s printed %d bytes for %d pods", c.id, s.outBytes, pods)
		}
		return nil
	default:
		return nil
	}
	if s.outLine != want {
		return fmt.Errorf("%s printed %d lines, want %d for %d pods", c.id, s.outLine, want, pods)
	}
	if s.firstRow < 0 || s.firstRow > s.wall {
		return fmt.Errorf("%s: first row at %s of a %s run", c.id, s.firstRow, s.wall)
	}
	return nil
}

// argv is c's command line: a floor variant, a program of its own (found
// on PATH, the plugin's folder first), or kubectl with c's arguments.
func (e *env) argv(c command) []string {
	switch {
	case c.isFloor():
		return e.floorArgs(c.floor)
	case c.program != "":
		return append([]string{c.program}, c.args...)
	}
	return append([]string{e.kubectl}, c.args...)
}

func (e *env) floorArgs(flags []string) []string {
	return append([]string{filepath.Join(e.pluginDir, "floor"), "-kubeconfig", e.kubeconfig}, flags...)
}

func (e *env) environ() []string {
	return append(os.Environ(), "KUBECONFIG="+e.kubeconfig, "PATH="+e.path, "NO_COLOR=1")
}

// commandTimeout bounds one run; kubectl -o json at 50,000 pods takes
// minutes on two busy cores, kubectl's table at 150,000 more than one.
const commandTimeout = 20 * time.Minute

// exitError is a client that ran and exited with another code than 0.
type exitError struct {
	argv   []string
	code   int
	stderr string
}

func (x *exitError) Error() string {
	return fmt.Sprintf("%s: exit code %d: %s", strings.Join(x.argv, " "), x.code, x.stderr)
}

// runCommand runs c once and returns the wall time, CPU time and peak RSS
// of the client process, as the spawn helper measured them, and the API
// server's memory meanwhile. With out nil, spawn reads stdout through a
// pipe, counts it and times its first row; else stdout goes to out.
// kubectl execs plugins, so for podsync the process is the plugin, after
// kubectl's own start-up, which is included.
func (e *env) runCommand(ctx context.Context, c command, out, errOut io.Writer) (sample, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	result, err := os.CreateTemp("", "podsync-bench-run-")
	if err != nil {
		return sample{}, fmt.Errorf("result file: %w", err)
	}
	result.Close()
	defer os.Remove(result.Name())
	argv := e.argv(c)
	spawnArgs := []string{result.Name()}
	if out == nil {
		spawnArgs = []string{"-rows", fmt.Sprint(headerLines(c.out)), result.Name()}
	}
	cmd := exec.CommandContext(ctx, e.spawn, append(spawnArgs, argv...)...)
	cmd.Env = e.environ()
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	if errOut != nil {
		cmd.Stderr = io.MultiWriter(&stderr, errOut)
	}
	// Killing spawn would leave its child running: kill the process group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stop, apiCPU := e.apiMeter.start(), e.apiCPUSpan()
	runErr := cmd.Run()
	idle, peak := stop()
	used := apiCPU()
	s, err := readSample(result.Name())
	if err != nil {
		return s, fmt.Errorf("%s: %w (%v): %s", strings.Join(argv, " "), err, runErr, tail(stderr.String()))
	}
	s.apiIdle, s.apiPeak, s.apiCPU, s.stderr = idle, peak, used, tail(stderr.String())
	if s.code != 0 {
		return s, &exitError{argv: argv, code: s.code, stderr: s.stderr}
	}
	if runErr != nil {
		return s, fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), runErr, s.stderr)
	}
	return s, nil
}

func headerLines(k outputKind) int {
	if k == outTable {
		return 1
	}
	return 0
}

// readSample reads what spawn wrote (see hack/bench/spawn).
func readSample(path string) (sample, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return sample{}, fmt.Errorf("read the measurement: %w", err)
	}
	var wall, cpu, first int64
	var s sample
	if _, err := fmt.Sscan(string(data), &wall, &cpu, &s.maxRSS, &s.code, &first, &s.outBytes, &s.outLine); err != nil {
		return sample{}, fmt.Errorf("parse the measurement %q: %w", data, err)
	}
	s.wall, s.cpu, s.firstRow = time.Duration(wall), time.Duration(cpu), time.Duration(first)
	return s, nil
}

// measureBaseline is the peak RSS spawn hands to any child it starts (see
// hack/bench/spawn): the smallest peak RSS the bench can report.
func (e *env) measureBaseline(ctx context.Context) (sample, error) {
	return e.runCommand(ctx, command{id: "baseline", program: "true"}, nil, nil)
}

// probeWatchList says why the server does not serve WatchList, or "" when
// it does: the floor streams the pods of a selector that matches none.
func (e *env) probeWatchList(ctx context.Context) (string, error) {
	c := command{id: "probe", floor: []string{"-watchlist", "-l", benchLabel + "=none"}}
	s, err := e.runCommand(ctx, c, nil, nil)
	var x *exitError
	switch {
	case errors.As(err, &x) && x.code == 3:
		return firstLine(x.stderr), nil
	case err != nil:
		return "", fmt.Errorf("probe WatchList: %w", err)
	case lastLine(s.stderr) != "pods: 0":
		return "", fmt.Errorf("probe WatchList: the floor said %q, want pods: 0", s.stderr)
	}
	return "", nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// tail keeps the end of a long stderr for an error message.
func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 2000 {
		s = "..." + s[len(s)-2000:]
	}
	return s
}

// apiCPUSpan begins a span of the API server's CPU time; its end returns
// what the server used meanwhile: serving the client, and whatever else
// it did (about 0.05 s a second when idle at 150,000 pods). -1 when not
// measured: no /proc, or several clusters.
func (e *env) apiCPUSpan() func() time.Duration {
	none := func() time.Duration { return -1 }
	if e.cluster == nil {
		return none
	}
	pid := e.cluster.PIDs()[localcluster.APIServer]
	before, err := procCPU(pid)
	if err != nil {
		return none
	}
	return func() time.Duration {
		after, err := procCPU(pid)
		if err != nil {
			return -1
		}
		return after - before
	}
}
