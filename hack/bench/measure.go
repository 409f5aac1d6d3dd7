package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// command is one measured client.
type command struct {
	id    string
	label string
	// floor runs the floor client (hack/bench/floor) instead of kubectl.
	floor bool
	// program, when set, runs instead of kubectl.
	program string
	args    []string
}

var commands = []command{
	{id: "floor", label: "floor: paginated protobuf LIST, discarded", floor: true},
	{id: "kubectl", label: "`kubectl get pods -A`", args: []string{"get", "pods", "-A"}},
	{id: "kubectl-json", label: "`kubectl get pods -A -o json`", args: []string{"get", "pods", "-A", "-o", "json"}},
	{id: "podsync", label: "`kubectl podsync -A --once`", args: []string{"podsync", "-A", "--once"}},
	{id: "podsync-json", label: "`kubectl podsync -A --once -o json`", args: []string{"podsync", "-A", "--once", "-o", "json"}},
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
}

// cmdResult is every run of one command at one size.
type cmdResult struct {
	cmd     command
	samples []sample
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

// stat is the median and the spread of one number over the runs.
type stat struct{ median, min, max float64 }

func statOf(samples []sample, f func(sample) float64) stat {
	if len(samples) == 0 {
		return stat{}
	}
	v := make([]float64, len(samples))
	for i, s := range samples {
		v[i] = f(s)
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
		if e.cfg.only == nil || e.cfg.only[c.id] {
			out = append(out, c)
		}
	}
	// Each -compare build runs as its own plugin, kubectl-podsyncNAME.
	for _, b := range e.cfg.compare {
		out = append(out,
			command{id: "podsync@" + b.name, label: "`kubectl podsync -A --once`, build " + b.name, args: []string{"podsync" + b.name, "-A", "--once"}},
			command{id: "podsync-json@" + b.name, label: "`kubectl podsync -A --once -o json`, build " + b.name, args: []string{"podsync" + b.name, "-A", "--once", "-o", "json"}})
	}
	return out
}

// baseID is the command a -compare build's command stands for.
func baseID(id string) string {
	base, _, _ := strings.Cut(id, "@")
	return base
}

// measureCommands checks the output once, then runs every command
// cfg.runs times, alternating them and rotating their order each round so
// that no command always follows the same one.
func (e *env) measureCommands(ctx context.Context, pods int) ([]*cmdResult, error) {
	cmds := e.selected()
	if e.cfg.check {
		if err := e.checkOutput(ctx, pods); err != nil {
			return nil, err
		}
	}
	if e.cfg.warmup {
		for _, c := range cmds {
			if _, err := e.runCommand(ctx, c, nil, nil); err != nil {
				return nil, err
			}
		}
	}
	results := make([]*cmdResult, len(cmds))
	for i, c := range cmds {
		results[i] = &cmdResult{cmd: c}
	}
	for round := range e.cfg.runs {
		for k := range cmds {
			i := (k + round) % len(cmds)
			s, err := e.runCommand(ctx, cmds[i], nil, nil)
			if err != nil {
				return results, err
			}
			results[i].samples = append(results[i].samples, s)
			e.logf("  %d pods, run %d/%d: %-13s wall %6.2fs  cpu %6.2fs  maxrss %5.0f MiB",
				pods, round+1, e.cfg.runs, cmds[i].id, s.wall.Seconds(), s.cpu.Seconds(), float64(s.maxRSS)/(1<<20))
		}
	}
	return results, nil
}

// checkOutput makes sure the commands being timed print what they should:
// podsync's table the same rows as `kubectl get pods -A` (all but AGE),
// podsync's JSON the same pods as `kubectl get pods -A -o json`, and the
// floor as many pods.
func (e *env) checkOutput(ctx context.Context, pods int) error {
	if err := e.checkTable(ctx, pods); err != nil {
		return err
	}
	// A prebuilt plugin (-plugin) may be an older one, measured for
	// comparison: its requests are its own.
	if e.cfg.plugin == "" {
		if err := e.checkRequests(ctx); err != nil {
			return err
		}
	}
	if err := e.checkJSON(ctx, pods); err != nil {
		return err
	}
	var errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	floorCmd := e.floorCommand(ctx)
	floorCmd.Stdout, floorCmd.Stderr = io.Discard, &errOut
	if err := floorCmd.Run(); err != nil {
		return fmt.Errorf("bench floor: %w: %s", err, tail(errOut.String()))
	}
	if got := strings.TrimSpace(errOut.String()); got != "pods: "+strconv.Itoa(pods) {
		return fmt.Errorf("bench floor said %q, want pods: %d", got, pods)
	}
	return nil
}

func (e *env) output(ctx context.Context, args ...string) ([]byte, error) {
	var out bytes.Buffer
	if _, err := e.runCommand(ctx, command{id: "check", args: args}, &out, nil); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// listRequest matches client-go's -v=6 line for a list of pods.
var listRequest = regexp.MustCompile(`"Response" verb="GET" url="[^"]*/pods\?([^"]*)"`)

// checkRequests makes sure the table is measured on its fast path: pods
// as protobuf and cells without objects, never the fallback that lists
// the table with every object in it.
func (e *env) checkRequests(ctx context.Context) error {
	var errOut bytes.Buffer
	if _, err := e.runCommand(ctx, command{id: "check", args: []string{"podsync", "-A", "--once", "-v=6"}}, io.Discard, &errOut); err != nil {
		return err
	}
	lists := 0
	for _, m := range listRequest.FindAllStringSubmatch(errOut.String(), -1) {
		query := m[1]
		if strings.Contains(query, "watch=true") {
			continue
		}
		lists++
		if strings.Contains(query, "includeObject=Object") {
			return fmt.Errorf("kubectl podsync -A --once listed the table with objects (%s): the cells did not line up with the pods", query)
		}
	}
	if lists == 0 {
		return fmt.Errorf("kubectl podsync -A --once -v=6 logged no list request: %s", tail(errOut.String()))
	}
	return nil
}

// cellSplit splits a table line into cells: the tabwriter pads with at
// least three spaces, and no pod cell holds two spaces in a row.
var cellSplit = regexp.MustCompile(` {2,}`)

// tableRows maps namespace/name to the cells of a table, without the
// columns named in drop.
func tableRows(text []byte, drop ...string) (header []string, rows map[string][]string, err error) {
	lines := strings.Split(strings.TrimRight(string(text), "\n"), "\n")
	header = cellSplit.Split(strings.TrimSpace(lines[0]), -1)
	keep := make([]bool, len(header))
	ns, name := slices.Index(header, "NAMESPACE"), slices.Index(header, "NAME")
	if ns < 0 || name < 0 {
		return nil, nil, fmt.Errorf("no NAMESPACE and NAME columns in %q", lines[0])
	}
	var kept []string
	for i, h := range header {
		keep[i] = !slices.Contains(drop, h)
		if keep[i] {
			kept = append(kept, h)
		}
	}
	rows = map[string][]string{}
	for _, line := range lines[1:] {
		cells := cellSplit.Split(strings.TrimSpace(line), -1)
		if len(cells) < len(header)-1 || len(cells) > len(header) {
			return nil, nil, fmt.Errorf("line %q has %d cells for %d columns", line, len(cells), len(header))
		}
		var row []string
		for i, c := range cells {
			if keep[i] {
				row = append(row, c)
			}
		}
		rows[cells[ns]+"/"+cells[name]] = row
	}
	return kept, rows, nil
}

// checkTable compares podsync's table with kubectl's, cell by cell, but
// for EVENT, CHANGES and AGE (which moves on between the two commands).
func (e *env) checkTable(ctx context.Context, pods int) error {
	ours, err := e.output(ctx, "podsync", "-A", "--once")
	if err != nil {
		return err
	}
	if lines := bytes.Count(ours, []byte("\n")); lines != pods+1 {
		return fmt.Errorf("kubectl podsync -A --once printed %d lines, want %d pods and a header", lines, pods)
	}
	theirs, err := e.output(ctx, "get", "pods", "-A")
	if err != nil {
		return err
	}
	oh, orows, err := tableRows(ours, "EVENT", "AGE", "CHANGES")
	if err != nil {
		return fmt.Errorf("kubectl podsync -A --once: %w", err)
	}
	th, trows, err := tableRows(theirs, "AGE")
	if err != nil {
		return fmt.Errorf("kubectl get pods -A: %w", err)
	}
	if !slices.Equal(oh, th) {
		return fmt.Errorf("podsync's columns %q differ from kubectl's %q", oh, th)
	}
	if len(orows) != len(trows) {
		return fmt.Errorf("podsync printed %d pods, kubectl %d", len(orows), len(trows))
	}
	for k, want := range trows {
		if got := orows[k]; !slices.Equal(got, want) {
			return fmt.Errorf("pod %s: podsync printed %q, kubectl %q", k, got, want)
		}
	}
	return nil
}

// checkJSON compares every object podsync -o json prints with the same
// pod in `kubectl get pods -A -o json`. Both outputs go through files and
// each pod is kept as a hash of its canonical JSON, so that the check
// stays small at 50,000 pods.
func (e *env) checkJSON(ctx context.Context, pods int) error {
	ours, err := e.outputFile(ctx, "podsync", "-A", "--once", "-o", "json")
	if err != nil {
		return err
	}
	defer os.Remove(ours)
	theirs, err := e.outputFile(ctx, "get", "pods", "-A", "-o", "json")
	if err != nil {
		return err
	}
	defer os.Remove(theirs)
	want, err := hashKubectlList(theirs)
	if err != nil {
		return fmt.Errorf("kubectl get pods -A -o json: %w", err)
	}
	got, err := hashEventLines(ours)
	if err != nil {
		return fmt.Errorf("kubectl podsync -A --once -o json: %w", err)
	}
	if len(got) != pods || len(want) != pods {
		return fmt.Errorf("kubectl podsync -A --once -o json printed %d pods and kubectl %d, want %d", len(got), len(want), pods)
	}
	for k, h := range want {
		if got[k] != h {
			return fmt.Errorf("pod %s: podsync -o json printed another object than kubectl -o json", k)
		}
	}
	return nil
}

// outputFile runs a command with stdout to a new file and returns its path.
func (e *env) outputFile(ctx context.Context, args ...string) (string, error) {
	f, err := os.CreateTemp("", "podsync-bench-out-")
	if err != nil {
		return "", fmt.Errorf("output file: %w", err)
	}
	_, runErr := e.runCommand(ctx, command{id: "check", args: args}, f, nil)
	if err := errors.Join(runErr, f.Close()); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// canonical hashes an object decoded into maps: json.Marshal sorts the
// keys, so equal objects hash alike whatever order they were printed in.
func canonical(obj map[string]any) ([sha256.Size]byte, error) {
	data, err := json.Marshal(obj)
	return sha256.Sum256(data), err
}

// hashKubectlList reads a List's items one at a time.
func hashKubectlList(path string) (map[string][sha256.Size]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<20))
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("no items: %w", err)
		}
		if tok == "items" {
			break
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, fmt.Errorf("items is not a list (%v)", err)
	}
	out := map[string][sha256.Size]byte{}
	for dec.More() {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			return nil, err
		}
		h, err := canonical(obj)
		if err != nil {
			return nil, err
		}
		out[objectKey(obj)] = h
	}
	return out, nil
}

// hashEventLines reads podsync's {"type":"SYNC","object":{...}} lines.
func hashEventLines(path string) (map[string][sha256.Size]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][sha256.Size]byte{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var ev struct {
			Type   string
			Object map[string]any
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("line %.200q: %w", sc.Bytes(), err)
		}
		if ev.Type != "SYNC" {
			return nil, fmt.Errorf("a %s line, want SYNC only", ev.Type)
		}
		h, err := canonical(ev.Object)
		if err != nil {
			return nil, err
		}
		k := objectKey(ev.Object)
		if _, twice := out[k]; twice {
			return nil, fmt.Errorf("pod %s printed twice", k)
		}
		out[k] = h
	}
	return out, sc.Err()
}

func objectKey(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	return ns + "/" + name
}

func (e *env) floorArgs() []string {
	return []string{filepath.Join(e.pluginDir, "floor"), "-kubeconfig", e.kubeconfig}
}

func (e *env) floorCommand(ctx context.Context) *exec.Cmd {
	argv := e.floorArgs()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = e.environ()
	return cmd
}

func (e *env) environ() []string {
	return append(os.Environ(), "KUBECONFIG="+e.kubeconfig, "PATH="+e.path, "NO_COLOR=1")
}

// commandTimeout bounds one run; kubectl -o json at 50,000 pods takes
// minutes on two busy cores.
const commandTimeout = 15 * time.Minute

// runCommand runs c once with stdout to out (nil: /dev/null) and returns
// the wall time, CPU time and peak RSS of the client process, as the spawn
// helper measured them. kubectl execs plugins, so for podsync the process is
// the plugin, after kubectl's own start-up, which is included.
func (e *env) runCommand(ctx context.Context, c command, out, errOut io.Writer) (sample, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	result, err := os.CreateTemp("", "podsync-bench-run-")
	if err != nil {
		return sample{}, fmt.Errorf("result file: %w", err)
	}
	result.Close()
	defer os.Remove(result.Name())
	argv := append([]string{e.kubectl}, c.args...)
	switch {
	case c.floor:
		argv = e.floorArgs()
	case c.program != "":
		argv = append([]string{c.program}, c.args...)
	}
	cmd := exec.CommandContext(ctx, e.spawn, append([]string{result.Name()}, argv...)...)
	cmd.Env = e.environ()
	if out == nil {
		devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return sample{}, fmt.Errorf("open %s: %w", os.DevNull, err)
		}
		defer devnull.Close()
		// An *os.File goes to the child as is: no copying goroutine here.
		out = devnull
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	if errOut != nil {
		cmd.Stderr = io.MultiWriter(&stderr, errOut)
	}
	// Killing spawn would leave its child running: kill the process group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Run(); err != nil {
		return sample{}, fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, tail(stderr.String()))
	}
	return readSample(result.Name())
}

// readSample reads what spawn wrote: wall ns, CPU ns, peak RSS bytes and
// the exit code.
func readSample(path string) (sample, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return sample{}, fmt.Errorf("read the measurement: %w", err)
	}
	var wall, cpu, rss int64
	var code int
	if _, err := fmt.Sscan(string(data), &wall, &cpu, &rss, &code); err != nil {
		return sample{}, fmt.Errorf("parse the measurement %q: %w", data, err)
	}
	return sample{wall: time.Duration(wall), cpu: time.Duration(cpu), maxRSS: rss}, nil
}

// measureBaseline is the peak RSS spawn hands to any child it starts (see
// hack/bench/spawn): the smallest peak RSS the bench can report.
func (e *env) measureBaseline(ctx context.Context) (sample, error) {
	return e.runCommand(ctx, command{id: "baseline", program: "true"}, nil, nil)
}

// tail keeps the end of a long stderr for an error message.
func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 2000 {
		s = "..." + s[len(s)-2000:]
	}
	return s
}
