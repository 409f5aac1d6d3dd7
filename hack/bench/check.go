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
	"regexp"
	"slices"
	"strings"
)

// checkOutput makes sure the commands being timed print what they should:
// podsync's table the same rows as `kubectl get pods -A` (all but AGE) and
// podsync's JSON the same pods as `kubectl get pods -A -o json`. A check
// whose commands the memory guard left out is skipped, and said so.
func (e *env) checkOutput(ctx context.Context, pods int, results []*cmdResult) (notes []string, err error) {
	skipped := func(ids ...string) string { return e.uncheckable(pods, results, ids...) }
	if why := skipped("podsync", "kubectl"); why != "" {
		notes = append(notes, "table not compared with kubectl's: "+why)
	} else if err := e.checkTable(ctx, pods); err != nil {
		return notes, err
	}
	// A prebuilt plugin (-plugin) may be an older one, measured for
	// comparison: its requests are its own.
	if e.cfg.plugin == "" && skipped("podsync") == "" {
		if err := e.checkRequests(ctx); err != nil {
			return notes, err
		}
	}
	if why := skipped("podsync-json", "kubectl-json"); why != "" {
		notes = append(notes, "JSON not compared with kubectl's: "+why)
	} else if err := e.checkJSON(ctx, pods); err != nil {
		return notes, err
	}
	return notes, nil
}

// uncheckable says why the check cannot run one of the commands ids at
// pods, or "": the guard left it out of the measurements, or, when it is
// not measured in this run (-only), the guard would have. kubectl's JSON
// of 150,000 pods takes some 10 GiB beside the API server's 7.
func (e *env) uncheckable(pods int, results []*cmdResult, ids ...string) string {
	for _, id := range ids {
		if i := slices.IndexFunc(results, func(r *cmdResult) bool { return r.cmd.id == id }); i >= 0 {
			if results[i].skipped != "" {
				return results[i].cmd.label + " " + results[i].skipped
			}
			continue
		}
		if c := commandByID(id); c != nil {
			if why := e.wontFit(*c, pods); why != "" {
				return c.label + " " + why
			}
		}
	}
	return ""
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

// sinceLast is the age of a pod's last restart in its RESTARTS cell, "3
// (5m2s ago)", which moves on between two commands like AGE.
var sinceLast = regexp.MustCompile(`\([0-9smhd]+ ago\)`)

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
				row = append(row, sinceLast.ReplaceAllString(c, "(ago)"))
			}
		}
		rows[cells[ns]+"/"+cells[name]] = row
	}
	return kept, rows, nil
}

// checkTable compares podsync's table with kubectl's, cell by cell, but
// for EVENT, CHANGES and the ages (which move on between the two
// commands).
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
