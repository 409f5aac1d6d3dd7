package cmd

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"reflect"
	"slices"
	"strings"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
)

// kubeContext is one kubeconfig context of a run over several.
type kubeContext struct {
	name string
	// flags are the command's kubeconfig flags with --context set to name:
	// a RESTClientGetter for this context alone.
	flags *genericclioptions.ConfigFlags
	// namespace is the context's own default, or -n; "" with -A.
	namespace  string
	restConfig *rest.Config
	// targets are the run's targets placed in namespace, when it is not
	// the first context's.
	targets []check.Target
	// unusable says why the context cannot be used (its kubeconfig entry
	// does not load, its discovery failed or did not answer): exit 1, or
	// skipped with --skip-unavailable.
	unusable error
}

// selectContexts resolves --context against the kubeconfig's contexts.
// One context found leaves the flags naming it, and the run is exactly the
// run of one context; several are completed each with its own namespace,
// user and cluster (o.contexts).
func (o *Options) selectContexts() error {
	arg := o.configFlags.Context
	if arg == nil || *arg == "" {
		return nil
	}
	// A copy reads the kubeconfig: the flags' own loader, once made, keeps
	// the --context it was made with.
	raw, err := flagsFor(o.configFlags, "").ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return usageError("kubeconfig: %s", oneLine(err))
	}
	names, err := matchContexts(*arg, raw.Contexts)
	if err != nil {
		return podsync.UsageError{Err: err}
	}
	if len(names) == 1 {
		*arg = names[0]
		return nil
	}
	for _, name := range names {
		c, err := o.completeContext(name)
		if err != nil {
			// As kubectl, a context whose entry cannot be loaded (a
			// missing CA file) cannot be used: it is the run's to report,
			// or to skip.
			c.unusable = fmt.Errorf("kubeconfig: %s", oneLine(err))
		}
		o.contexts = append(o.contexts, c)
	}
	return nil
}

// usable is the first context that can be used, nil when none can.
func (o *Options) usable() *kubeContext {
	for i := range o.contexts {
		if o.contexts[i].unusable == nil {
			return &o.contexts[i]
		}
	}
	return nil
}

// checkUnusable ends the run when a context cannot be used, unless
// --skip-unavailable; with it, it ends the run only when none can.
func (o *Options) checkUnusable() error {
	var errs []error
	for _, c := range o.contexts {
		if c.unusable == nil {
			continue
		}
		err := fmt.Errorf("context %s: %w", c.name, c.unusable)
		if !o.skipUnavail {
			return err
		}
		errs = append(errs, err)
	}
	if len(errs) == len(o.contexts) && len(errs) > 0 {
		return fmt.Errorf("no context can be used: %w", errors.Join(errs...))
	}
	return nil
}

func (o *Options) completeContext(name string) (kubeContext, error) {
	c := kubeContext{name: name, flags: flagsFor(o.configFlags, name)}
	ns, _, err := c.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return c, err
	}
	if !o.allNamespaces {
		c.namespace = ns
	}
	c.restConfig, err = c.flags.ToRESTConfig()
	return c, err
}

// matchContexts is --context as a list: the argument itself when a context
// has that name, else each comma-separated item as a shell pattern
// (path.Match, where * also matches the / of names such as EKS ARNs),
// each matching at least one context. The result keeps the items' order,
// the matches of one pattern sorted, each context once.
func matchContexts(arg string, contexts map[string]*clientcmdapi.Context) ([]string, error) {
	if _, ok := contexts[arg]; ok {
		return []string{arg}, nil
	}
	have := slices.Sorted(maps.Keys(contexts))
	var out []string
	for item := range strings.SplitSeq(arg, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		found := false
		for _, name := range have {
			ok, err := path.Match(slashless(item), slashless(name))
			if err != nil {
				return nil, fmt.Errorf("invalid --context pattern %q: %w", item, err)
			}
			if ok {
				found = true
				if !slices.Contains(out, name) {
					out = append(out, name)
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("no context matches %q in the kubeconfig; %s", item, contextList(have))
		}
	}
	if len(out) == 0 {
		return nil, errors.New("--context names no context")
	}
	return out, nil
}

// slashless makes / an ordinary character for path.Match.
func slashless(s string) string { return strings.ReplaceAll(s, "/", "\x00") }

func contextList(names []string) string {
	if len(names) == 0 {
		return "it has no contexts"
	}
	return "its contexts are " + strings.Join(names, ", ")
}

// flagsFor copies the kubeconfig flags with --context set to name, so that
// every other flag given (--user, --as, --token, --request-timeout, ...)
// applies to each context as it would to one. ConfigFlags caches its
// loader in unexported fields, so it is copied field by field; reflection
// copies every exported one, also those a later cli-runtime adds.
func flagsFor(f *genericclioptions.ConfigFlags, name string) *genericclioptions.ConfigFlags {
	c := genericclioptions.NewConfigFlags(true)
	src, dst := reflect.ValueOf(f).Elem(), reflect.ValueOf(c).Elem()
	for i := range src.NumField() {
		if dst.Field(i).CanSet() {
			dst.Field(i).Set(src.Field(i))
		}
	}
	c.Context = &name
	return c
}

// contextNames are the contexts of a run over several, nil with one.
func (o *Options) contextNames() []string {
	var names []string
	for _, c := range o.contexts {
		names = append(names, c.name)
	}
	return names
}

// clusters are the clusters of the run: one per context of a run over
// several, else the one of the flags.
func (o *Options) clusters() ([]podsync.Cluster, error) {
	if len(o.contexts) == 0 {
		clients, err := podsync.NewClients(o.restConfig)
		if err != nil {
			return nil, err
		}
		return []podsync.Cluster{{Clients: clients}}, nil
	}
	var out []podsync.Cluster
	for _, c := range o.contexts {
		if c.unusable != nil {
			out = append(out, podsync.Cluster{Name: c.name, Unusable: c.unusable})
			continue
		}
		clients, err := podsync.NewClients(c.restConfig)
		if err != nil {
			return nil, fmt.Errorf("context %s: %w", c.name, err)
		}
		out = append(out, podsync.Cluster{Name: c.name, Namespace: c.namespace, Clients: clients, Targets: c.targets})
	}
	return out, nil
}
