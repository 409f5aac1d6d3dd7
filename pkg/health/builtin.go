package health

import (
	_ "embed"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// builtInFile holds the rules podsync ships for popular operators' kinds,
// in the format of a --health-rules file plus two fields of its own:
// source (the upstream project and the version whose status conventions
// the rule was read from) and categories (a rule for every custom resource
// kind whose CRD lists one of these categories, for operators whose kinds
// are too many to name, such as Crossplane's managed resources).
//
//go:embed builtin.yaml
var builtInFile []byte

// BuiltInName is how verdicts and errors name the built-in rules' file.
const BuiltInName = "built-in"

// builtInRules compiles the built-in rules once.
var builtInRules = sync.OnceValues(func() (*Rules, error) {
	return parse(BuiltInName, builtInFile, true)
})

// WithBuiltIn is rs (the user's rules) with the built-in rules added: a
// user rule for a group and kind replaces the built-in rule for it. rs is
// not changed.
func (rs *Rules) WithBuiltIn() (*Rules, error) {
	bi, err := builtInRules()
	if err != nil {
		return nil, fmt.Errorf("the built-in health rules: %w", err)
	}
	out := &Rules{byKind: map[schema.GroupKind]*rule{}, byCategory: bi.byCategory, builtIns: bi.order}
	if rs != nil {
		out.order = rs.order
		for gk, r := range rs.byKind {
			out.byKind[gk] = r
		}
	}
	for _, r := range bi.order {
		if _, user := out.byKind[r.gk]; user {
			if out.overridden == nil {
				out.overridden = map[schema.GroupKind]*rule{}
			}
			out.overridden[r.gk] = r
			continue
		}
		out.byKind[r.gk] = r
	}
	return out, nil
}

// ruleFor is the rule that judges an object of gk, whose CRD lists
// categories; nil when none does.
func (rs *Rules) ruleFor(gk schema.GroupKind, d Discovery) *rule {
	if rs == nil {
		return nil
	}
	if r, ok := rs.byKind[gk]; ok {
		return r
	}
	if d.BuiltIn {
		return nil
	}
	for _, r := range rs.byCategory {
		if slices.ContainsFunc(r.categories, func(c string) bool { return slices.Contains(d.Categories, c) }) {
			return r
		}
	}
	return nil
}

// Show writes the rules in effect as a rules file, each entry under a
// comment that says where it comes from: the user's file, marking a rule
// that replaces a built-in one, or the built-in rules with their upstream
// source. A rule by CRD category, which a --health-rules file cannot give,
// is shown as comments.
func (rs *Rules) Show(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# The health rules in effect: a rule for a group and kind decides for its\n" +
		"# objects; a kind without one is judged by kstatus's conventions. A\n" +
		"# --health-rules entry for the same group and kind replaces a built-in rule.\n")
	for _, r := range rs.order {
		head := fmt.Sprintf("%s: --health-rules %s, entry #%d", r.gk, r.file, r.index)
		if bi := rs.overridden[r.gk]; bi != nil {
			head += "; replaces the built-in rule from " + bi.source
		}
		writeRule(&b, head, r, "")
	}
	for _, r := range rs.builtIns {
		if rs.overridden[r.gk] != nil {
			continue
		}
		writeRule(&b, fmt.Sprintf("%s: built-in, from %s", r.gk, r.source), r, "")
	}
	for _, r := range rs.byCategory {
		head := fmt.Sprintf("every custom resource whose CRD has the category %s and no rule of its own: built-in, from %s",
			strings.Join(r.categories, " or "), r.source)
		writeRule(&b, head, r, "# ")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeRule writes r as an entry of a rules file under the comment head;
// prefix starts every line of the entry.
func writeRule(b *strings.Builder, head string, r *rule, prefix string) {
	fmt.Fprintf(b, "\n# %s\n", head)
	if len(r.categories) > 0 {
		fmt.Fprintf(b, "%s- categories: %s\n", prefix, strings.Join(r.categories, ", "))
	} else {
		fmt.Fprintf(b, "%s- apiVersion: %s\n%s  kind: %s\n", prefix, r.apiVersion, prefix, r.gk.Kind)
	}
	for _, e := range r.exprs {
		if e != nil {
			fmt.Fprintf(b, "%s  %s: %s\n", prefix, e.field, yamlScalar(e.src))
		}
	}
}

// yamlScalar is src as a plain YAML scalar when it can be one, else
// double-quoted.
func yamlScalar(src string) string {
	src = strings.Join(strings.Fields(src), " ")
	if strings.ContainsAny(src[:1], "!&*[{|>'\"%@`#-?:,") || strings.Contains(src, ": ") || strings.Contains(src, " #") {
		return fmt.Sprintf("%q", src)
	}
	return src
}
