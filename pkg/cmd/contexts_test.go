package cmd

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestMatchContexts(t *testing.T) {
	have := map[string]*clientcmdapi.Context{}
	for _, n := range []string{"prod-eu", "prod-us", "staging", "dev,test", "arn:aws:eks:eu-west-1:1:cluster/shop", "p*"} {
		have[n] = &clientcmdapi.Context{}
	}
	cases := []struct {
		arg  string
		want []string
		err  string
	}{
		{"staging", []string{"staging"}, ""},
		{"dev,test", []string{"dev,test"}, ""}, // a context's whole name wins over the list
		{"p*", []string{"p*"}, ""},             // and over the pattern
		{"prod-us,staging", []string{"prod-us", "staging"}, ""},
		{"prod-*", []string{"prod-eu", "prod-us"}, ""},
		{"staging, prod-?s", []string{"staging", "prod-us"}, ""},
		{"prod-*,prod-eu", []string{"prod-eu", "prod-us"}, ""},
		{"prod-[e]u,", []string{"prod-eu"}, ""},
		{"arn:*:cluster/*", []string{"arn:aws:eks:eu-west-1:1:cluster/shop"}, ""},
		{"*shop", []string{"arn:aws:eks:eu-west-1:1:cluster/shop"}, ""},
		{"prod-*,qa-*", nil, `no context matches "qa-*" in the kubeconfig; its contexts are arn:aws:eks:eu-west-1:1:cluster/shop, dev,test, p*, prod-eu, prod-us, staging`},
		{"nope", nil, `no context matches "nope"`},
		{"prod-[", nil, `invalid --context pattern "prod-["`},
		{",", nil, "--context names no context"},
	}
	for _, c := range cases {
		got, err := matchContexts(c.arg, have)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: error %v, want one containing %q", c.arg, err, c.err)
		case c.err == "" && (err != nil || !reflect.DeepEqual(got, c.want)):
			t.Errorf("%q: got %q, %v; want %q", c.arg, got, err, c.want)
		}
	}
	if _, err := matchContexts("x", nil); err == nil || !strings.Contains(err.Error(), "it has no contexts") {
		t.Errorf("no contexts: %v", err)
	}
}

// Every kubeconfig flag the user gave applies to each context's copy.
func TestFlagsForKeepsEveryFlag(t *testing.T) {
	f := genericclioptions.NewConfigFlags(true)
	c := &cobra.Command{}
	f.AddFlags(c.Flags())
	if err := c.ParseFlags([]string{"--as", "alice", "--request-timeout", "7s", "-n", "shop", "--context", "x", "--kubeconfig", "/k"}); err != nil {
		t.Fatal(err)
	}
	got := flagsFor(f, "prod-eu")
	if *got.Context != "prod-eu" || *f.Context != "x" {
		t.Errorf("context %q (original %q)", *got.Context, *f.Context)
	}
	if *got.Impersonate != "alice" || *got.Timeout != "7s" || *got.Namespace != "shop" || *got.KubeConfig != "/k" {
		t.Errorf("flags lost: as %q, timeout %q, namespace %q, kubeconfig %q", *got.Impersonate, *got.Timeout, *got.Namespace, *got.KubeConfig)
	}
}

// threeContexts writes a kubeconfig with the contexts p-1, p-2 (namespace
// shop) and other, on the given server.
func threeContexts(t *testing.T, server string) string {
	t.Helper()
	return writeKubeconfig(t, server, "other", "p-1", "p-2/shop", "other/elsewhere")
}

// Each context keeps its own default namespace; -n and -A apply to all.
func TestContextsKeepTheirNamespaces(t *testing.T) {
	t.Setenv("KUBECONFIG", threeContexts(t, "https://127.0.0.1:1"))
	cases := map[string]struct {
		args []string
		want []string
	}{
		"own defaults": {[]string{"--context", "p-*"}, []string{"p-1/default", "p-2/shop"}},
		"-n":           {[]string{"--context", "p-2,other", "-n", "web"}, []string{"p-2/web", "other/web"}},
		"-A":           {[]string{"--context", "p-*", "-A"}, []string{"p-1/", "p-2/"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := parsed(t, tc.args...)
			if err := o.Complete(o.cmd, nil); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, k := range o.contexts {
				got = append(got, k.name+"/"+k.namespace)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// parsedOptions are Options with args parsed into their flags.
type parsedOptions struct {
	*Options
	cmd *cobra.Command
}

func parsed(t *testing.T, args ...string) parsedOptions {
	t.Helper()
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	o := parsedOptions{Options: NewOptions(streams), cmd: &cobra.Command{}}
	o.AddFlags(o.cmd)
	if err := o.cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return o
}

// A list of contexts is completed name by name after each comma.
func TestCompleteContexts(t *testing.T) {
	t.Setenv("KUBECONFIG", threeContexts(t, "https://127.0.0.1:1"))
	o := parsed(t)
	cases := []struct {
		typed     string
		want      []string
		directive cobra.ShellCompDirective
	}{
		{"", []string{"other", "p-1", "p-2"}, cobra.ShellCompDirectiveNoFileComp},
		{"p", []string{"p-1", "p-2"}, cobra.ShellCompDirectiveNoFileComp},
		{"p-1,", []string{"p-1,other", "p-1,p-2"}, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace},
		{"p-1,o", []string{"p-1,other"}, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace},
	}
	for _, c := range cases {
		got, directive := o.completeContexts(o.cmd, nil, c.typed)
		if !reflect.DeepEqual(got, c.want) || directive != c.directive {
			t.Errorf("%q: got %q :%d, want %q :%d", c.typed, got, directive, c.want, c.directive)
		}
	}
}

// An unknown context or pattern is exit 2 naming the contexts there are,
// before any request; a list reaches every context's server, and an
// unusable one at start is exit 1 naming it.
func TestContextListThroughTheCommand(t *testing.T) {
	kubeconfig, requests := countingServer(t)
	t.Setenv("KUBECONFIG", threeContexts(t, serverOf(t, kubeconfig)))
	code, stdout, stderr := run(t, os.Getenv("KUBECONFIG"), "--context", "q-*", "--once")
	want := `error: no context matches "q-*" in the kubeconfig; its contexts are other, p-1, p-2` + "\n"
	if code != 2 || stdout != "" || stderr != want || requests.Load() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q after %d requests; want exit 2 and %q", code, stdout, stderr, requests.Load(), want)
	}
	code, _, stderr = run(t, os.Getenv("KUBECONFIG"), "--context", "p-*", "--once")
	if code != 1 || !strings.HasPrefix(stderr, "error: context p-") || strings.Count(stderr, "\n") != 1 || requests.Load() == 0 {
		t.Errorf("exit %d, stderr %q after %d requests; want exit 1 naming a context", code, stderr, requests.Load())
	}
}

// serverOf is the server of cluster c in a kubeconfig.
func serverOf(t *testing.T, kubeconfig string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Clusters["c"].Server
}
