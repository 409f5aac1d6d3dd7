package krew

import (
	"context"
	"net"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// complete runs `kubectl __complete podsync ARGS` as a shell would on TAB,
// with kubectl_complete-podsync on PATH, and returns the candidates and the
// directive.
func complete(t *testing.T, args ...string) ([]string, int, harness.Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := runCmd(env.Command(ctx, nil, append([]string{"__complete", "podsync"}, args...)...))
	if ctx.Err() != nil {
		t.Fatalf("kubectl __complete podsync %s did not end within 2m\n%s", strings.Join(args, " "), r)
	}
	lines := strings.Split(strings.TrimRight(r.Stdout, "\n"), "\n")
	last := lines[len(lines)-1]
	directive, err := strconv.Atoi(strings.TrimPrefix(last, ":"))
	if r.Code != 0 || !strings.HasPrefix(last, ":") || err != nil {
		t.Fatalf("kubectl __complete podsync %s: want exit 0 and a :DIRECTIVE line last\n%s", strings.Join(args, " "), r)
	}
	if strings.Contains(r.Stderr, "does not provide a matching completion executable") {
		t.Fatalf("kubectl did not find kubectl_complete-podsync:\n%s", r)
	}
	return lines[:len(lines)-1], directive, r
}

const (
	noFileComp        = 4
	noSpaceNoFileComp = 6
)

// targetTypes are the TYPE/ prefixes offered for an empty word.
var targetTypes = []string{"deployment/", "statefulset/", "daemonset/", "job/", "cronjob/", "replicaset/", "pod/"}

// kubectl's completion of `kubectl podsync` offers the real candidates:
// pods and namespaces of the cluster, contexts of the kubeconfig, output
// formats and check conditions.
func TestCompletionThroughKubectl(t *testing.T) {
	ns := env.Namespace(t)
	for _, name := range []string{"alpha-one", "alpha-two", "beta"} {
		env.Apply(t, ns, harness.PodYAML(name, nil))
	}
	contexts := strings.Fields(env.Kubectl(t, "config", "get-contexts", "-o", "name"))
	sort.Strings(contexts)
	if len(contexts) < 2 {
		t.Fatalf("want the cluster's kubeconfig to have two contexts, got %v", contexts)
	}

	cases := []struct {
		name      string
		args      []string
		want      []string
		directive int
	}{
		{"pod names", []string{"-n", ns, "al"}, []string{"alpha-one", "alpha-two"}, noFileComp},
		{"pod names not yet given, then the target types", []string{"-n", ns, "alpha-one", ""}, append([]string{"alpha-two", "beta"}, targetTypes...), noFileComp},
		{"pod names by label, no types (targets cannot go with -l)", []string{"-n", ns, "-l", "app=beta", ""}, []string{"beta"}, noFileComp},
		{"target types", []string{"-n", ns, "dep"}, []string{"deployment/"}, noSpaceNoFileComp},
		{"namespace", []string{"--namespace", ns[:len(ns)-1]}, []string{ns}, noFileComp},
		{"contexts", []string{"--context", ""}, contexts, noFileComp},
		{"output format", []string{"-o", "wi"}, []string{"wide"}, noFileComp},
		{"until conditions", []string{"--until", ""}, []string{"ready", "running", "succeeded", "completed", "healthy", "gone", "condition="}, noSpaceNoFileComp},
		{"until list", []string{"--until", "ready,h"}, []string{"ready,healthy"}, noSpaceNoFileComp},
		{"fail-on reasons", []string{"--fail-on", "Crash"}, []string{"CrashLoopBackOff"}, noSpaceNoFileComp},
		{"flag names", []string{"--wat"}, []string{"--watch-only"}, noFileComp},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, directive, r := complete(t, c.args...)
			got = withoutDescriptions(got)
			if !reflect.DeepEqual(got, c.want) || directive != c.directive {
				t.Errorf("kubectl __complete podsync %q: got %q :%d, want %q :%d\n%s", c.args, got, directive, c.want, c.directive, r)
			}
		})
	}

	t.Run("output formats", func(t *testing.T) {
		got, _, r := complete(t, "-o", "")
		for _, want := range []string{"json", "yaml", "wide", "name", "jsonpath=", "go-template=", "custom-columns="} {
			want = strings.TrimSuffix(want, "=")
			if !contains(got, want) {
				t.Errorf("-o completion lacks %s\n%s", want, r)
			}
		}
	})
}

// A cluster that does not answer must not hang the shell: completion of
// pod names gives up, and only the target types (which need no cluster)
// are offered.
func TestCompletionWithSilentServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // accept, never answer
		}
	}()
	got, directive, r := complete(t, "--server", "https://"+ln.Addr().String(), "-n", "default", "")
	t.Logf("pod name completion against a silent server gave up after %s", r.Took.Round(time.Millisecond))
	if !reflect.DeepEqual(got, targetTypes) || directive != noSpaceNoFileComp {
		t.Errorf("want only the target types and directive %d, got %q :%d\n%s", noSpaceNoFileComp, got, directive, r)
	}
	if r.Took > time.Minute {
		t.Errorf("completion took %s against a silent server", r.Took)
	}
}

// withoutDescriptions drops cobra's "\tdescription" from flag candidates.
func withoutDescriptions(cands []string) []string {
	var out []string
	for _, c := range cands {
		name, _, _ := strings.Cut(c, "\t")
		out = append(out, name)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
