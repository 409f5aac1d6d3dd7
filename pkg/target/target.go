// Package target turns TYPE/NAME arguments and -f manifests into the
// workloads a run watches, with kubectl's resource builder
// (k8s.io/cli-runtime/pkg/resource), so that short names, -n and
// multi-document YAML behave as in `kubectl get`. Parse checks everything
// it can without a cluster (the types, the files and what they hold);
// Resolve maps the TYPE/NAME arguments with the cluster's discovery, as
// kubectl does.
package target

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/resource"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// Types lists the TYPE/ prefixes completion offers, one per kind.
func Types() []string {
	out := make([]string, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, k.Names[0]+"/")
	}
	return out
}

// KindOf returns the kind a TYPE names ("deploy", "deployments.apps",
// "Deployment.v1.apps"), and false for a type podsync does not watch.
func KindOf(typ string) (string, bool) {
	gvr, gr := schema.ParseResourceArg(strings.ToLower(typ))
	candidates := []schema.GroupResource{gr}
	if gvr != nil {
		candidates = append(candidates, gvr.GroupResource())
	}
	for _, k := range kinds {
		for _, c := range candidates {
			if slices.Contains(k.Names, c.Resource) && (c.Group == "" || c.Group == k.Group) {
				return k.Kind, true
			}
		}
	}
	return "", false
}

// Resource is the API resource of a kind (all are served at v1).
func Resource(kind string) (schema.GroupVersionResource, bool) {
	k, ok := Lookup(kind)
	if !ok {
		return schema.GroupVersionResource{}, false
	}
	return k.Resource(), true
}

// kindOfGroupKind returns the target kind of an object's group and kind.
func kindOfGroupKind(gk schema.GroupKind) (string, bool) {
	for _, k := range kinds {
		if k.GroupKind == gk {
			return k.Kind, true
		}
	}
	return "", false
}

// Input is what the command line says about targets.
type Input struct {
	// Args are the positional arguments: POD_NAME or TYPE/NAME.
	Args []string
	// Filenames are the -f values; "-" is Stdin.
	Filenames []string
	Recursive bool
	Stdin     io.Reader
	// Namespace is -n or the context's namespace; Explicit says -n was
	// given, so that an object of another namespace is refused, as by
	// `kubectl get -f`.
	Namespace string
	Explicit  bool
}

// Plan is what Parse found: the targets of the manifests and the TYPE/NAME
// arguments still to map.
type Plan struct {
	namespace string
	// files are the targets found in the manifests.
	files []check.Target
	// args are the TYPE/NAME arguments (a plain pod name is pod/NAME).
	args []string
	// skipped and deletedOnSuccess: what the manifests' hooks imply (see
	// hookOf).
	skipped          []string
	deletedOnSuccess map[check.Target]string
}

// In is the plan for a context whose namespace is ns: TYPE/NAME arguments
// and objects of the manifests without a namespace are in ns.
func (p *Plan) In(ns string) *Plan {
	c := *p
	c.namespace = ns
	return &c
}

func (p *Plan) place(t check.Target) check.Target {
	if t.Namespace == "" {
		t.Namespace = p.namespace
	}
	return t
}

// Empty says there is no target: no TYPE/NAME argument and no object in
// the manifests.
func (p *Plan) Empty() bool { return len(p.files) == 0 && len(p.args) == 0 }

// Namespaces lists the namespaces of the targets, sorted.
func (p *Plan) Namespaces() []string {
	var out []string
	if len(p.args) > 0 {
		out = append(out, p.namespace)
	}
	for _, t := range p.files {
		out = append(out, p.place(t).Namespace)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Parse checks the arguments and reads the manifests, without any request
// to a cluster; every error is the user's (exit 2). Without a TYPE/NAME
// argument and without -f, it returns an empty Plan: plain pod names are
// then watched as pod names. With either, plain names are Pod targets.
func Parse(in Input) (*Plan, error) {
	p := &Plan{namespace: in.Namespace}
	typed := slices.ContainsFunc(in.Args, func(a string) bool { return strings.Contains(a, "/") })
	if !typed && len(in.Filenames) == 0 {
		return p, nil
	}
	for _, a := range in.Args {
		arg, err := parseArg(a)
		if err != nil {
			return nil, err
		}
		p.args = append(p.args, arg)
	}
	if len(in.Filenames) == 0 {
		return p, nil
	}
	infos, err := readManifests(in)
	if err != nil {
		return nil, err
	}
	for _, info := range infos {
		if err := p.addObject(info, in); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// parseArg checks one argument and returns it as TYPE/NAME.
func parseArg(a string) (string, error) {
	typ, name, typed := strings.Cut(a, "/")
	if !typed {
		return "pod/" + a, nil
	}
	if typ == "" || name == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("invalid argument %q: want POD_NAME or TYPE/NAME", a)
	}
	return a, nil
}

// MaxInput bounds what -f reads, in all: files, folders, URLs and stdin
// together. A manifest larger than this is a mistake (or endless input),
// not something to hold in memory.
const MaxInput = 64 << 20

// errTooLarge is the one-line error of input beyond MaxInput.
var errTooLarge = fmt.Errorf("the input of -f is larger than %d MiB in all, the most podsync reads", MaxInput>>20)

// readManifests decodes the manifests with kubectl's builder, locally: no
// request is made but for -f URLs, and a file that cannot be read or
// decoded is the user's error. Stdin and URLs are read once, here, at
// most MaxInput bytes in all.
func readManifests(in Input) ([]*resource.Info, error) {
	var files []string
	var streams []namedInput
	budget := int64(MaxInput)
	stdinRead := false
	for _, f := range in.Filenames {
		switch {
		case f == "-":
			if stdinRead {
				return nil, errors.New("-f - (stdin) can be given only once")
			}
			stdinRead = true
			data, err := readBounded(in.Stdin, &budget)
			if err != nil {
				return nil, fmt.Errorf("read the manifest on stdin: %w", err)
			}
			streams = append(streams, namedInput{"STDIN", data})
		case strings.HasPrefix(f, "http://") || strings.HasPrefix(f, "https://"):
			data, err := fetch(f, &budget)
			if err != nil {
				return nil, fmt.Errorf("-f %s: %w", f, err)
			}
			streams = append(streams, namedInput{f, data})
		case special(f):
			data, err := readSpecial(f, &budget)
			if err != nil {
				return nil, fmt.Errorf("-f %s: %w", f, err)
			}
			streams = append(streams, namedInput{f, data})
		default:
			files = append(files, f)
		}
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("-f %s: %w", f, err)
		}
		if err := spend(f, in.Recursive, &budget); err != nil {
			return nil, err
		}
	}
	b := resource.NewLocalBuilder().Unstructured().Flatten()
	if len(files) > 0 {
		b = b.FilenameParam(false, &resource.FilenameOptions{Filenames: files, Recursive: in.Recursive})
	}
	for _, s := range streams {
		b = b.Stream(bytes.NewReader(s.data), s.name)
	}
	infos, err := b.Do().Infos()
	if err != nil {
		return nil, err
	}
	return infos, nil
}

// namedInput is a manifest read whole: stdin or a URL.
type namedInput struct {
	name string
	data []byte
}

// readBounded reads r to its end, at most *budget bytes, and takes what
// it read from the budget.
func readBounded(r io.Reader, budget *int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, *budget+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > *budget {
		return nil, errTooLarge
	}
	*budget -= int64(len(data))
	return data, nil
}

// special says whether path is a device, a FIFO or a socket (what
// `-f <(kustomize build)` passes as /dev/fd/N): its size says nothing of
// what it holds, so it is read here, bounded, rather than by the builder.
func special(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.Mode().IsRegular() && !info.IsDir()
}

func readSpecial(path string, budget *int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readBounded(f, budget)
}

// fetch reads a manifest URL, as kubectl does (a 200 answer), bounded.
func fetch(url string, budget *int64) ([]byte, error) {
	resp, err := http.Get(url) //nolint:gosec,noctx // the user's -f URL; the command bounds the wait
	if err != nil {
		return nil, fmt.Errorf("read the manifest: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("read the manifest: %s", resp.Status)
	}
	return readBounded(resp.Body, budget)
}

// manifestExtensions are the files kubectl's builder reads in a folder.
var manifestExtensions = []string{".json", ".yaml", ".yml"}

// spend takes from the budget the size of a file, or of the manifests of
// a folder as kubectl's builder would read them (its subfolders with -R).
func spend(path string, recursive bool, budget *int64) error {
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != path && !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		if p != path && !slices.Contains(manifestExtensions, filepath.Ext(p)) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		*budget -= info.Size()
		if *budget < 0 {
			return errTooLarge
		}
		return nil
	})
	if errors.Is(err, errTooLarge) {
		return err
	}
	if err != nil {
		return fmt.Errorf("-f %s: %w", path, err)
	}
	return nil
}

// addObject adds one object of a manifest as a target. Only the
// workload kinds and Pod are known here; every other kind is read at the
// manifest's apiVersion and judged by its status.
func (p *Plan) addObject(info *resource.Info, in Input) error {
	gvk := info.Object.GetObjectKind().GroupVersionKind()
	t := check.Target{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: info.Namespace, Name: info.Name}
	if kind, ok := kindOfGroupKind(gvk.GroupKind()); ok {
		t.APIVersion, t.Kind = "", kind
	}
	// An object without a namespace is placed by Resolve, in each
	// context's own namespace, unless its kind is cluster-scoped.
	if in.Explicit && t.Namespace != "" && t.Namespace != in.Namespace {
		// kubectl get -f says the same.
		return fmt.Errorf("the namespace from the provided object %q does not match the namespace %q. You must pass '--namespace=%s' to perform this operation", t.Namespace, in.Namespace, t.Namespace)
	}
	if t.Name == "" {
		return fmt.Errorf("%s in %s has no name (generateName cannot be watched)", gvk.Kind, info.Source)
	}
	hook := hookOf(info.Object)
	if hook.skip != "" {
		p.skipped = append(p.skipped, fmt.Sprintf("%s in %s is %s: not judged", t, info.Source, hook.skip))
		return nil
	}
	if hook.deletedOnSuccess != "" {
		if p.deletedOnSuccess == nil {
			p.deletedOnSuccess = map[check.Target]string{}
		}
		p.deletedOnSuccess[t] = hook.deletedOnSuccess
	}
	if !slices.Contains(p.files, t) {
		p.files = append(p.files, t)
	}
	return nil
}

// Skipped says, a line each, which objects of the manifests are not
// judged and why (hooks that do not run on install or upgrade).
func (p *Plan) Skipped() []string {
	if p == nil {
		return nil
	}
	return p.skipped
}

// DeletedOnSuccess maps the hooks of the manifests whose delete policy
// removes them once they succeed to what their absence means; a key has
// the namespace the manifest gave, empty when it gave none.
func (p *Plan) DeletedOnSuccess() map[check.Target]string {
	if p == nil {
		return nil
	}
	return p.deletedOnSuccess
}

// Resolve returns the targets: those of the manifests, and the TYPE/NAME
// arguments mapped with the cluster's discovery by kubectl's builder
// (getter is the command's ConfigFlags). Nothing is read but discovery: a
// target that does not exist yet is waited for by the run. A kind that
// this cluster does not serve is kept: the run says so.
func Resolve(getter genericclioptions.RESTClientGetter, p *Plan) ([]check.Target, error) {
	var out []check.Target
	add := func(t check.Target) {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	var mapper meta.RESTMapper
	for _, t := range p.files {
		if t.Generic() && t.Namespace == "" {
			if mapper == nil {
				m, err := getter.ToRESTMapper()
				if err != nil {
					return nil, fmt.Errorf("map the kinds of the manifests: %w", err)
				}
				mapper = m
			}
			root, err := clusterScoped(mapper, t)
			if err != nil {
				return nil, err
			}
			if root {
				add(t)
				continue
			}
		}
		add(p.place(t))
	}
	if len(p.args) == 0 {
		return out, nil
	}
	infos, err := resource.NewBuilder(getter).Unstructured().
		NamespaceParam(p.namespace).DefaultNamespace().
		ResourceTypeOrNameArgs(false, p.args...).
		RequireObject(false).
		Do().Infos()
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", strings.Join(p.args, " "), err)
	}
	for _, info := range infos {
		gvk := info.Mapping.GroupVersionKind
		t := check.Target{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: info.Namespace, Name: info.Name}
		if kind, ok := kindOfGroupKind(gvk.GroupKind()); ok {
			t.APIVersion, t.Kind = "", kind
		}
		if info.Mapping.Scope.Name() != meta.RESTScopeNameNamespace {
			t.Namespace = ""
		}
		add(t)
	}
	return out, nil
}

// clusterScoped says whether a manifest's object is of a cluster-scoped
// kind. A kind this cluster does not serve counts as namespaced.
func clusterScoped(mapper meta.RESTMapper, t check.Target) (bool, error) {
	gv, err := schema.ParseGroupVersion(t.APIVersion)
	if err != nil {
		return false, fmt.Errorf("%s/%s: %w", t.Kind, t.Name, err)
	}
	m, err := mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: t.Kind}, gv.Version)
	switch {
	case meta.IsNoMatchError(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("map %s/%s with discovery: %w", t.Kind, t.Name, err)
	}
	return m.Scope.Name() != meta.RESTScopeNameNamespace, nil
}
