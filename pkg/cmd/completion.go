package cmd

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// completionTimeout keeps a slow or absent cluster from hanging the shell.
const completionTimeout = 5 * time.Second

// registerCompletions wires shell completion for pod names, TYPE/NAME and
// flag values.
// kubectl runs it through the kubectl_complete-podsync program.
func (o *Options) registerCompletions(c *cobra.Command) {
	c.ValidArgsFunction = o.completeArgs
	fixed := map[string][]string{
		"until":        untilCompletions(),
		"fail-on":      append(check.KnownReasons(), "none"),
		"color":        {"auto", "always", "never"},
		"probe-budget": {"auto", "never"},
	}
	for name, values := range fixed {
		_ = c.RegisterFlagCompletionFunc(name, completeList(values))
	}
	_ = c.RegisterFlagCompletionFunc("namespace", o.completeNamespaces)
	_ = c.RegisterFlagCompletionFunc("context", o.completeContexts)
	_ = c.RegisterFlagCompletionFunc("cluster", o.completeClusters)
	_ = c.RegisterFlagCompletionFunc("user", o.completeUsers)
}

// untilCompletions offers the --until keywords, and condition= to be
// completed by hand.
func untilCompletions() []string {
	words := check.Keywords()
	words[len(words)-1] = "condition="
	return words
}

// completeList completes the last item of a comma-separated list, leaving
// out the items already given.
func completeList(values []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		done, last := "", toComplete
		if i := strings.LastIndex(toComplete, ","); i >= 0 {
			done, last = toComplete[:i+1], toComplete[i+1:]
		}
		given := map[string]bool{}
		for _, v := range strings.Split(done, ",") {
			given[v] = true
		}
		var out []string
		for _, v := range values {
			if strings.HasPrefix(v, last) && !given[v] {
				out = append(out, done+v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}

func (o *Options) client() (kubernetes.Interface, error) {
	cfg, err := o.configFlags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = completionTimeout
	return kubernetes.NewForConfig(cfg)
}

func (o *Options) completePods(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	client, err := o.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ns, _, err := o.configFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: o.labelSelector, FieldSelector: o.fieldSelector})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	taken := map[string]bool{}
	for _, a := range args {
		taken[a] = true
	}
	var names []string
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Name, toComplete) && !taken[p.Name] {
			names = append(names, p.Name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

func (o *Options) completeNamespaces(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	client, err := o.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	list, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, n := range list.Items {
		if strings.HasPrefix(n.Name, toComplete) {
			names = append(names, n.Name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// kubeconfigNames completes names of one kind of kubeconfig entry.
// (kubectl's completion helpers would need its package-global factory.)
func (o *Options) kubeconfigNames(pick func(contexts, clusters, users []string) []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	raw, err := o.configFlags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var contexts, clusters, users []string
	for n := range raw.Contexts {
		contexts = append(contexts, n)
	}
	for n := range raw.Clusters {
		clusters = append(clusters, n)
	}
	for n := range raw.AuthInfos {
		users = append(users, n)
	}
	var out []string
	for _, n := range pick(contexts, clusters, users) {
		if strings.HasPrefix(n, toComplete) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeContexts completes a context name, and after a comma the next
// name of a list (--context a,b), leaving no space so the list can go on.
func (o *Options) completeContexts(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	names, directive := o.kubeconfigNames(func(c, _, _ []string) []string { return c }, "")
	if !strings.Contains(toComplete, ",") {
		names, _ = completeList(names)(c, args, toComplete)
		return names, directive
	}
	return completeList(names)(c, args, toComplete)
}

func (o *Options) completeClusters(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return o.kubeconfigNames(func(_, c, _ []string) []string { return c }, toComplete)
}

func (o *Options) completeUsers(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return o.kubeconfigNames(func(_, _, u []string) []string { return u }, toComplete)
}
