package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	for _, c := range []struct {
		args  []string
		shape string
		err   string
	}{
		{args: nil, shape: "deployment"},
		{args: []string{"-pod-shape", "small", "-pods", "5000,50000,150000"}, shape: "small"},
		{args: []string{"-pod-shape", "tiny"}, err: `-pod-shape "tiny": want deployment or small`},
		{args: []string{"-pods", "50000,5000"}, err: "-pods: counts must increase (5000 after 50000)"},
		{args: []string{"-pods", "250000"}, err: `-pods: "250000" is not a pod count from 2 to 200000`},
		{args: []string{"-churn-peers", "kubectl,stern"}, err: `-churn-peers: unknown watcher "stern" (known: kubectl,floor)`},
		{args: []string{"-apiserver-memory-runs", "0"}, err: "-apiserver-memory-runs 0: want 1 to 20"},
		{args: []string{"-crs", "1"}, err: "-crs 1: want 0 (none) or 2 to 100000"},
		{args: []string{"-crs-only", "-crs", "0"}, err: "-crs-only needs -crs above 0"},
		{args: []string{"-crs-only", "-clusters", "2"}, err: "-crs-only starts its own cluster"},
	} {
		cfg, err := parseConfig(append([]string{"-bin", "/tools"}, c.args...), io.Discard)
		if c.err != "" {
			var ue usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: got error %v, want a usage error with %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if cfg.shape != c.shape {
			t.Errorf("%q: shape %q, want %q", c.args, cfg.shape, c.shape)
		}
		// An attached cluster's own shape replaces only a shape not given.
		if given := slices.Contains(c.args, "-pod-shape"); cfg.shapeGiven != given {
			t.Errorf("%q: -pod-shape given %v, want %v", c.args, cfg.shapeGiven, given)
		}
	}
}

func TestChurnPeers(t *testing.T) {
	for flag, want := range map[string]string{"": "[kubectl floor]", "-churn-peers=": "[]", "-churn-peers=floor": "[floor]"} {
		args := []string{"-bin", "/tools"}
		if flag != "" {
			args = append(args, flag)
		}
		cfg, err := parseConfig(args, io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if got := fmt.Sprint(cfg.churnPeers); got != want {
			t.Errorf("%q: peers %s, want %s", args, got, want)
		}
	}
}

// A small pod with a running status, before the server adds managedFields,
// is at most 2 KB and half a deployment pod.
func TestSmallPodsAreSmall(t *testing.T) {
	size := map[string]int{}
	for _, shape := range []string{"deployment", "small"} {
		l := &loader{e: &env{cfg: &config{shape: shape, perApp: 25, namespaces: 20}}}
		p := l.pod(1234, 1234/25, "8d5c3b0e-6a1f-4c4e-9f3e-2b7f1a0c9d11", "node-3")
		p.Status = runningStatus(p, "10.0.0.3", "10.1.3.17")
		b, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		size[shape] = len(b)
	}
	if size["small"] > 2048 || 2*size["small"] > size["deployment"] {
		t.Errorf("small pod %d bytes, deployment pod %d: want at most 2 KB and half", size["small"], size["deployment"])
	}
	t.Logf("protobuf without managedFields: deployment %d bytes, small %d", size["deployment"], size["small"])
}

func TestAPIServerMemoryRuns(t *testing.T) {
	for flags, want := range map[string]int{"": 5, "-smoke": 1, "-smoke -apiserver-memory-runs 3": 3, "-apiserver-memory-runs 2": 2} {
		args := append([]string{"-bin", "/tools"}, strings.Fields(flags)...)
		cfg, err := parseConfig(args, io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if cfg.apiMemRuns != want {
			t.Errorf("%q: %d runs on a restarted API server, want %d", args, cfg.apiMemRuns, want)
		}
	}
}

func TestCustomResourceScenarioFlags(t *testing.T) {
	for _, c := range []struct {
		args      []string
		crs, runs int
		only      bool
	}{
		{args: nil, crs: 1000, runs: 5},
		{args: []string{"-crs-only"}, crs: 1000, runs: 3, only: true},
		{args: []string{"-crs-only", "-runs", "7", "-crs", "500"}, crs: 500, runs: 7, only: true},
		{args: []string{"-smoke"}, crs: 0, runs: 1},
	} {
		cfg, err := parseConfig(append([]string{"-bin", "/tools"}, c.args...), io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if cfg.crs != c.crs || cfg.runs != c.runs || cfg.crsOnly != c.only {
			t.Errorf("%q: -crs %d, -runs %d, -crs-only %v; want %d, %d, %v", c.args, cfg.crs, cfg.runs, cfg.crsOnly, c.crs, c.runs, c.only)
		}
	}
}
