package health

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	celenv "github.com/google/cel-go/common/env"
	"github.com/google/cel-go/ext"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
)

// Rules are the health rules of --health-rules files, one per kind
// (group and kind). The zero value and nil have no rules. Rules are
// immutable once loaded and safe for concurrent use.
type Rules struct {
	byKind map[schema.GroupKind]*rule
	// order are the user's rules, in the files' order.
	order []*rule
	// Set by WithBuiltIn: the built-in rules for a group and kind that
	// no user rule overrides are in byKind too; byCategory are the
	// built-in rules for the custom resource kinds of a CRD category;
	// overridden are the built-in rules a user rule replaces.
	byCategory []*rule
	builtIns   []*rule
	overridden map[schema.GroupKind]*rule
}

// rule is one entry of a health-rules file.
type rule struct {
	file       string // the file's name as the user gave it
	index      int    // 1-based position in the file's list
	line       int    // the entry's line in the file
	apiVersion string
	gk         schema.GroupKind
	// exprs in Flux's order of evaluation: inProgress, failed, current;
	// a nil entry is an expression the rule does not give.
	exprs [3]*expression
	// Built-in rules only: source names the upstream project and version
	// the rule was read from; categories, when set, match every custom
	// resource kind whose CRD lists one of them (gk is then empty).
	source     string
	categories []string
}

// expression is one compiled CEL expression of a rule.
type expression struct {
	field string // inProgress, failed or current
	src   string
	prog  cel.Program
}

// The fields of an entry, as in Flux's healthCheckExprs.
const (
	fieldAPIVersion = "apiVersion"
	fieldKind       = "kind"
	fieldInProgress = "inProgress"
	fieldFailed     = "failed"
	fieldCurrent    = "current"
	// Built-in rules only.
	fieldSource     = "source"
	fieldCategories = "categories"
)

// costLimit bounds the work of one evaluation, in CEL's cost units (about
// one per operation), so that a rule over a huge list cannot stall the run.
const costLimit = 10_000_000

// label names the rule in a verdict: "health rule rules.yaml#2
// (Rollout.argoproj.io)".
func (r *rule) label() string {
	switch {
	case len(r.categories) > 0:
		return fmt.Sprintf("built-in health rule (category %s)", strings.Join(r.categories, ", "))
	case r.source != "":
		return fmt.Sprintf("built-in health rule (%s)", r.gk)
	}
	return fmt.Sprintf("health rule %s#%d (%s)", r.file, r.index, r.gk)
}

// where names the entry in an error: "rules.yaml:7: entry #2
// (argoproj.io/v1alpha1 Rollout)".
func where(file string, line, index int, apiVersion, kind string) string {
	s := fmt.Sprintf("%s:%d: entry #%d", file, line, index)
	switch {
	case apiVersion != "" && kind != "":
		s += fmt.Sprintf(" (%s %s)", apiVersion, kind)
	case kind != "":
		s += fmt.Sprintf(" (kind %s)", kind)
	case apiVersion != "":
		s += fmt.Sprintf(" (apiVersion %s)", apiVersion)
	}
	return s
}

// builtInWorkloads are the kinds podsync judges with their own rollout
// rule and their pods (the rows of package target's table, which this
// package may not import); a health rule for one of them would never be
// used.
var builtInWorkloads = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "Deployment"}:  true,
	{Group: "apps", Kind: "StatefulSet"}: true,
	{Group: "apps", Kind: "DaemonSet"}:   true,
	{Group: "apps", Kind: "ReplicaSet"}:  true,
	{Group: "batch", Kind: "Job"}:        true,
	{Group: "batch", Kind: "CronJob"}:    true,
	{Group: "", Kind: "Pod"}:             true,
}

// Load reads --health-rules files, in order. Each is a YAML list of
// entries in the shape of Flux's healthCheckExprs. An error names the
// file and, for a bad entry, its line, position and kind; for a CEL
// error also the expression and the error's position in it. Two entries
// for one kind, in one file or in two, are an error.
func Load(paths []string) (*Rules, error) {
	all := &Rules{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, fmt.Errorf("%s: cannot read the health rules: %v", p, err)
		}
		rs, err := Parse(p, data)
		if err != nil {
			return nil, err
		}
		for _, r := range rs.order {
			if err := all.add(r); err != nil {
				return nil, err
			}
		}
	}
	return all, nil
}

// Parse reads one health-rules file; name is how errors and verdicts
// name it.
func Parse(name string, data []byte) (*Rules, error) {
	return parse(name, data, false)
}

// parse reads a rules file; builtIn allows the fields of the built-in
// rules' file (source, categories).
func parse(name string, data []byte, builtIn bool) (*Rules, error) {
	root, err := decode(name, data)
	if err != nil {
		return nil, err
	}
	rs := &Rules{}
	if root == nil {
		return rs, nil
	}
	env, err := baseEnv()
	if err != nil {
		return nil, fmt.Errorf("%s: cannot set up CEL: %v", name, err)
	}
	for i, item := range root.Content {
		r, err := parseEntry(env, name, i+1, item, builtIn)
		if err != nil {
			return nil, err
		}
		if len(r.categories) > 0 {
			rs.byCategory = append(rs.byCategory, r)
			continue
		}
		if err := rs.add(r); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// decode returns the file's top-level list; nil for an explicitly empty
// list.
func decode(name string, data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: is empty: a health-rules file is a YAML list of entries with apiVersion, kind, current and optionally inProgress and failed", name)
		}
		return nil, fmt.Errorf("%s: not valid YAML: %s", name, text.OneLine(strings.TrimPrefix(err.Error(), "yaml: "), 0))
	}
	var more yaml.Node
	if err := dec.Decode(&more); err == nil {
		return nil, fmt.Errorf("%s:%d: a second YAML document: a health-rules file is one YAML list", name, more.Line)
	} else if !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: not valid YAML: %s", name, text.OneLine(strings.TrimPrefix(err.Error(), "yaml: "), 0))
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil, fmt.Errorf("%s: is empty: a health-rules file is a YAML list of entries with apiVersion, kind, current and optionally inProgress and failed", name)
	}
	if root.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s:%d: the top level is %s, not a list: a health-rules file is a YAML list of entries with apiVersion, kind, current and optionally inProgress and failed", name, root.Line, nodeKind(root))
	}
	if len(root.Content) == 0 {
		return nil, nil
	}
	return root, nil
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.Tag {
	case "!!null":
		return "empty"
	case "!!str":
		return "a string"
	case "!!int", "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	}
	return "a " + strings.TrimPrefix(n.Tag, "!!") + " value"
}

// parseEntry reads and compiles the index'th entry of file.
func parseEntry(env *cel.Env, file string, index int, n *yaml.Node, builtIn bool) (*rule, error) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: is %s, not a mapping with apiVersion, kind, current, inProgress and failed", where(file, n.Line, index, "", ""), nodeKind(n))
	}
	fields := map[string]string{}
	lines := map[string]int{}
	var unknown []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		switch k.Value {
		case fieldAPIVersion, fieldKind, fieldInProgress, fieldFailed, fieldCurrent:
		case fieldSource, fieldCategories:
			if !builtIn {
				unknown = append(unknown, fmt.Sprintf("%q (line %d)", k.Value, k.Line))
				continue
			}
		default:
			unknown = append(unknown, fmt.Sprintf("%q (line %d)", k.Value, k.Line))
			continue
		}
		if _, dup := lines[k.Value]; dup {
			return nil, fmt.Errorf("%s: %s is given twice (lines %d and %d)", where(file, n.Line, index, fields[fieldAPIVersion], fields[fieldKind]), k.Value, lines[k.Value], k.Line)
		}
		lines[k.Value] = k.Line
		if v.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%s: %s is %s, not a string", where(file, n.Line, index, "", ""), k.Value, nodeKind(v))
		}
		if v.Tag == "!!null" {
			continue
		}
		fields[k.Value] = v.Value
	}
	av, kind := strings.TrimSpace(fields[fieldAPIVersion]), strings.TrimSpace(fields[fieldKind])
	at := where(file, n.Line, index, av, kind)
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%s: unknown field %s: an entry has apiVersion, kind, current, inProgress and failed", at, strings.Join(unknown, ", "))
	}
	if builtIn {
		if fields[fieldSource] == "" {
			return nil, fmt.Errorf("%s: a built-in rule names its source", at)
		}
		if c := fields[fieldCategories]; c != "" {
			r := &rule{file: file, index: index, line: n.Line, source: fields[fieldSource], categories: strings.Split(strings.ReplaceAll(c, " ", ""), ",")}
			return r, compileAll(env, r, fields, lines, at)
		}
	}
	if av == "" {
		return nil, fmt.Errorf("%s: has no apiVersion (the group and version of the kind, e.g. argoproj.io/v1alpha1)", at)
	}
	if kind == "" {
		return nil, fmt.Errorf("%s: has no kind", at)
	}
	gv, err := schema.ParseGroupVersion(av)
	if err != nil {
		return nil, fmt.Errorf("%s: apiVersion %q is not GROUP/VERSION (or VERSION for the core group)", at, av)
	}
	if gv.Group == "" && strings.Contains(gv.Version, ".") {
		return nil, fmt.Errorf("%s: apiVersion %q has no version (e.g. %s/v1)", at, av, av)
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: kind}
	if builtInWorkloads[gk] {
		return nil, fmt.Errorf("%s: podsync judges a %s with its own rollout rule and its pods; a health rule is for other kinds", at, kind)
	}
	if strings.TrimSpace(fields[fieldCurrent]) == "" {
		return nil, fmt.Errorf("%s: has no current expression (it is required; inProgress and failed are optional)", at)
	}
	r := &rule{file: file, index: index, line: n.Line, apiVersion: av, gk: gk, source: fields[fieldSource]}
	return r, compileAll(env, r, fields, lines, at)
}

// compileAll compiles the entry's expressions into r.
func compileAll(env *cel.Env, r *rule, fields map[string]string, lines map[string]int, at string) error {
	for i, f := range []string{fieldInProgress, fieldFailed, fieldCurrent} {
		src, ok := fields[f]
		if !ok || strings.TrimSpace(src) == "" {
			if ok && f != fieldCurrent {
				return fmt.Errorf("%s: %s is empty (leave it out instead)", at, f)
			}
			continue
		}
		e, err := compile(env, f, src)
		if err != nil {
			return fmt.Errorf("%s: %s (line %d): %v", at, f, lines[f], err)
		}
		r.exprs[i] = e
	}
	return nil
}

// add adds r, refusing a second rule for its kind.
func (rs *Rules) add(r *rule) error {
	if prev, ok := rs.byKind[r.gk]; ok {
		return fmt.Errorf("%s: a second rule for %s: entry #%d of %s (line %d) already gives one (a rule's apiVersion names its group; the version does not count)",
			where(r.file, r.line, r.index, r.apiVersion, r.gk.Kind), r.gk, prev.index, prev.file, prev.line)
	}
	if rs.byKind == nil {
		rs.byKind = map[schema.GroupKind]*rule{}
	}
	rs.byKind[r.gk] = r
	rs.order = append(rs.order, r)
	return nil
}

// Len is the number of rules.
func (rs *Rules) Len() int {
	if rs == nil {
		return 0
	}
	return len(rs.order)
}

// Kinds are the kinds the rules are for, in the files' order.
func (rs *Rules) Kinds() []schema.GroupKind {
	if rs == nil {
		return nil
	}
	out := make([]schema.GroupKind, 0, len(rs.order))
	for _, r := range rs.order {
		out = append(out, r.gk)
	}
	return out
}

// Label names the rule for gk as a verdict does ("health rule
// rules.yaml#2 (Rollout.argoproj.io)"); "" when there is none.
func (rs *Rules) Label(gk schema.GroupKind) string {
	if rs == nil || rs.byKind[gk] == nil {
		return ""
	}
	return rs.byKind[gk].label()
}

// baseEnv is the CEL environment of Flux's health checks (fluxcd/pkg
// runtime/cel): the standard library with optional types, cross-type
// numeric comparisons, UTC as the default time zone, and the strings,
// sets and encoders extensions. No variable is declared: each expression
// gets its own free identifiers (status, metadata, spec, ...) declared as
// dyn when it is compiled.
func baseEnv() (*cel.Env, error) {
	// The standard library's matches is replaced by boundedMatch.
	std := celenv.NewLibrarySubset().AddExcludedFunctions(&celenv.Function{Name: "matches"})
	return cel.NewCustomEnv(
		cel.StdLib(cel.StdLibSubset(std)),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Sets(),
		ext.Encoders(),
		matchOverloads(),
	)
}

// compile parses and type-checks src, its free identifiers being the
// object's top-level fields of any type, and refuses an expression whose
// type is known and not bool.
func compile(env *cel.Env, field, src string) (*expression, error) {
	parsed, iss := env.Parse(src)
	if iss != nil && iss.Err() != nil {
		return nil, celIssues(iss)
	}
	var vars []cel.EnvOption
	var capitalized error
	seen := map[string]bool{}
	native := parsed.NativeRep()
	celast.PreOrderVisit(native.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() != celast.IdentKind {
			return
		}
		name := e.AsIdent()
		if seen[name] || strings.HasPrefix(name, "@") {
			return
		}
		seen[name] = true
		// A name the environment already knows (a type such as int or
		// string) stays what it is.
		if _, iss := env.Compile(name); iss == nil || iss.Err() == nil {
			return
		}
		// The fields of Kubernetes objects are lowerCamelCase: a
		// capitalized name is a word that lacks its quotes.
		if r := name[0]; r >= 'A' && r <= 'Z' && capitalized == nil {
			loc := native.SourceInfo().GetStartLocation(e.ID())
			capitalized = fmt.Errorf("line %d, column %d: %s is not a field of the object (their names begin in lower case); a string is quoted: '%s'",
				loc.Line(), loc.Column()+1, name, name)
		}
		vars = append(vars, cel.Variable(name, cel.DynType))
	}))
	if capitalized != nil {
		return nil, capitalized
	}
	full, err := env.Extend(vars...)
	if err != nil {
		return nil, fmt.Errorf("cannot declare its variables: %v", err)
	}
	checked, iss := full.Check(parsed)
	if iss != nil && iss.Err() != nil {
		return nil, celIssues(iss)
	}
	if t := checked.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return nil, fmt.Errorf("is not a boolean expression: it yields %s (compare it, e.g. status.phase == 'Healthy')", t)
	}
	prog, err := full.Program(checked, append(programOptions(), cel.EvalOptions(cel.OptOptimize))...)
	if err != nil {
		return nil, fmt.Errorf("cannot be prepared: %v", err)
	}
	return &expression{field: field, src: src, prog: prog}, nil
}

// celIssues is CEL's first error on one line, with its position in the
// expression ("line 1, column 14: Syntax error: ..."); the errors after
// it most often follow from it, so they are only counted.
func celIssues(iss *cel.Issues) error {
	errs := iss.Errors()
	if len(errs) == 0 {
		return errors.New(text.OneLine(iss.String(), 0))
	}
	e := errs[0]
	msg := text.OneLine(e.Message, 0)
	if loc := e.Location; loc != nil && loc.Line() > 0 {
		msg = fmt.Sprintf("line %d, column %d: %s", loc.Line(), loc.Column()+1, msg)
	}
	switch n := len(errs) - 1; {
	case n == 1:
		msg += " (and 1 more error)"
	case n > 1:
		msg += fmt.Sprintf(" (and %d more errors)", n)
	}
	return errors.New(msg)
}
