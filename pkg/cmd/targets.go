package cmd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/target"
)

// targetFlags are -f and -R, as kubectl names them.
func (o *Options) addTargetFlags(c *cobra.Command) {
	flags := genericclioptions.FileNameFlags{
		Usage:     "Watch the objects of these manifests (files, folders, URLs, or - for stdin), as kubectl get -f reads them, and the pods they control; a check judges each object by its kind's rule; repeatable.",
		Filenames: &o.filenames,
		Recursive: &o.recursive,
	}
	flags.AddFlags(c.Flags())
}

// parseTargets reads the TYPE/NAME arguments and the manifests, without a
// cluster, and checks how they combine with the other flags.
func (o *Options) parseTargets() error {
	if o.recursive && len(o.filenames) == 0 {
		return usageError("-R/--recursive needs -f")
	}
	if len(o.filenames) > 0 {
		o.prep.set("reading the manifests (-f " + strings.Join(o.filenames, ", -f ") + ")")
	}
	plan, err := target.Parse(target.Input{Args: o.names, Filenames: o.filenames, Recursive: o.recursive,
		Stdin: o.In, Namespace: o.namespace, Explicit: o.explicitNamespace})
	if err != nil {
		return usageError("%s", oneLine(err))
	}
	if plan.Empty() && len(o.filenames) == 0 {
		return nil // plain pod names, or none
	}
	for _, s := range plan.Skipped() {
		fmt.Fprintf(o.ErrOut, "podsync: %s\n", text.SafeLine(s, text.MaxLineLen))
	}
	if o.until != "" && plan.Empty() {
		// A failed generator piped in (kustomize build ... | podsync -f -)
		// must not pass a gate.
		held := "no object"
		if len(plan.Skipped()) > 0 {
			held = "no object but hooks that are not judged"
		}
		return usageError("nothing to judge: -f %s held %s", strings.Join(o.filenames, ", -f "), held)
	}
	switch {
	case o.allNamespaces:
		return usageError("TYPE/NAME and -f cannot be used with --all-namespaces: the targets name their namespaces")
	case o.labelSelector != "" || o.fieldSelector != "":
		return usageError("TYPE/NAME and -f cannot be used with --selector or --field-selector: the targets' own selectors choose the pods")
	}
	o.plan, o.names = plan, nil
	return nil
}

// resolveTargets maps the TYPE/NAME arguments with the cluster's discovery
// (kubectl's builder). It reports
// false when no target is left, so there is nothing to watch.
func (o *Options) resolveTargets() (bool, error) {
	if o.plan == nil {
		return true, nil
	}
	// Kinds are mapped with the discovery of the first context that
	// answers: one that does not is unusable (exit 1, or skipped).
	getter, targets, err := o.resolveUsable()
	if err != nil {
		return false, err
	}
	if len(targets) == 0 {
		fmt.Fprintln(o.ErrOut, "podsync: no object in the manifests: nothing to watch")
		return false, nil
	}
	o.config.Targets = targets
	for i, c := range o.contexts {
		if c.unusable != nil || o.explicitNamespace || c.namespace == o.namespace {
			continue
		}
		if o.contexts[i].targets, err = resolve(getter, o.plan.In(c.namespace)); err != nil {
			return false, fmt.Errorf("context %s: %w", c.name, err)
		}
	}
	return true, nil
}

// resolveUsable maps the plan with the discovery of the first context
// that can be used, and returns that context's getter. A context whose
// discovery fails, or does not answer within --request-timeout (30s when
// unset: a credential plugin may hang), is unusable: the run ends naming
// it, or goes on without it with --skip-unavailable.
func (o *Options) resolveUsable() (genericclioptions.RESTClientGetter, []check.Target, error) {
	what := "mapping the targets with the API server's discovery"
	if len(o.contexts) == 0 {
		o.prep.set(what)
		targets, err := resolveWithin(o.configFlags, o.plan, o.answerLimit())
		return o.configFlags, targets, err
	}
	for i := range o.contexts {
		c := &o.contexts[i]
		if c.unusable != nil {
			continue
		}
		o.prep.set(what + " of context " + c.name)
		targets, err := resolveWithin(c.flags, o.plan, o.answerLimit())
		switch {
		case err == nil:
			return c.flags, targets, nil
		case errors.As(err, new(podsync.UsageError)):
			return nil, nil, err
		}
		c.unusable = err
		if !o.skipUnavail {
			return nil, nil, fmt.Errorf("context %s: %w", c.name, err)
		}
	}
	return nil, nil, o.checkUnusable()
}

// answerLimit is --request-timeout, or 30s when unset.
func (o *Options) answerLimit() time.Duration {
	if o.restConfig != nil && o.restConfig.Timeout > 0 {
		return o.restConfig.Timeout
	}
	return podsync.DefaultAnswerLimit
}

// resolveWithin is resolve, given up after limit: the request that does
// not answer is left behind.
func resolveWithin(getter genericclioptions.RESTClientGetter, plan *target.Plan, limit time.Duration) ([]check.Target, error) {
	type result struct {
		targets []check.Target
		err     error
	}
	done := make(chan result, 1)
	go func() {
		targets, err := resolve(getter, plan)
		done <- result{targets, err}
	}()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case r := <-done:
		return r.targets, r.err
	case <-t.C:
		server := "the API server"
		if cfg, err := getter.ToRESTConfig(); err == nil {
			server += " at " + cfg.Host
		}
		return nil, fmt.Errorf("discovery: no answer within %s from %s or its credential plugin", limit, server)
	}
}

// resolve maps the plan with one context's discovery; a type the cluster
// does not know is the user's error.
func resolve(getter genericclioptions.RESTClientGetter, plan *target.Plan) ([]check.Target, error) {
	targets, err := target.Resolve(getter, plan)
	var noMatch *meta.NoResourceMatchError
	if errors.As(err, &noMatch) || err != nil && strings.Contains(err.Error(), "doesn't have a resource type") {
		return nil, usageError("%s", oneLine(err))
	}
	return targets, err
}

// targetNamespaces are the namespaces of the targets in every context.
func (o *Options) targetNamespaces() []string {
	if o.plan == nil {
		return nil
	}
	out := o.plan.Namespaces()
	for _, c := range o.contexts {
		if !o.explicitNamespace {
			out = append(out, o.plan.In(c.namespace).Namespaces()...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// completeArgs completes POD_NAME and TYPE/NAME: pod names and the TYPE/
// prefixes, then, after a TYPE/, the names of that kind.
func (o *Options) completeArgs(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	typ, prefix, typed := strings.Cut(toComplete, "/")
	if !typed {
		names, dir := o.completePods(c, args, toComplete)
		if o.allNamespaces || o.labelSelector != "" || o.fieldSelector != "" {
			// Targets cannot be combined with these: only pods can come.
			return names, dir
		}
		var types []string
		for _, t := range target.Types() {
			if strings.HasPrefix(t, toComplete) {
				types = append(types, t)
			}
		}
		if len(names) == 0 && len(types) > 0 {
			dir |= cobra.ShellCompDirectiveNoSpace
		}
		return append(names, types...), dir
	}
	kind, ok := target.KindOf(typ)
	gvr, _ := target.Resource(kind)
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names, err := o.resourceNames(gvr)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	taken := map[string]bool{}
	for _, a := range args {
		taken[a] = true
	}
	var out []string
	for _, n := range names {
		if arg := typ + "/" + n; strings.HasPrefix(n, prefix) && !taken[arg] {
			out = append(out, arg)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// resourceNames lists the names of one resource in the namespace, reading
// only their metadata.
func (o *Options) resourceNames(gvr schema.GroupVersionResource) ([]string, error) {
	cfg, err := o.configFlags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = completionTimeout
	client, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ns, _, err := o.configFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	list, err := client.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(list.Items))
	for _, item := range list.Items {
		names = append(names, item.Name)
	}
	return names, nil
}
