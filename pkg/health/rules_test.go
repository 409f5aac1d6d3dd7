package health

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// rolloutRules is the worked example of docs/health.md.
const rolloutRules = `# Argo Rollouts: status.phase says it all.
- apiVersion: argoproj.io/v1alpha1
  kind: Rollout
  inProgress: status.phase == 'Progressing' || status.phase == 'Paused'
  failed: status.phase == 'Degraded'
  current: status.phase == 'Healthy'
`

func mustParse(t *testing.T, src string) *Rules {
	t.Helper()
	rs, err := Parse("rules.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return rs
}

// TestRulesDecideWhereKstatusCannot: the Rollout-like kind, which kstatus
// cannot read, judged by a rule.
func TestRulesDecideWhereKstatusCannot(t *testing.T) {
	rs := mustParse(t, rolloutRules)
	const label = "health rule rules.yaml#1 (Rollout.argoproj.io)"
	for _, tc := range []struct {
		name  string
		obj   *unstructured.Unstructured
		state check.State
		msg   string
	}{
		{"Healthy", rolloutLike(2, "2", "Healthy", cond("Healthy", "True", "", "")), check.Met, "current is true: status.phase == 'Healthy'"},
		{"Progressing", rolloutLike(2, "2", "Progressing"), check.Pending, "inProgress is true: status.phase == 'Progressing' || status.phase == 'Paused'"},
		{"Paused", rolloutLike(2, "2", "Paused"), check.Pending, "inProgress is true"},
		{"Degraded", rolloutLike(2, "2", "Degraded"), check.Failed,
			"RolloutAborted: Rollout aborted update to revision 3 (failed is true: status.phase == 'Degraded')"},
		{"Healthy but an older generation observed", rolloutLike(3, "2", "Healthy"), check.Pending,
			"its controller has not observed generation 3 yet (status.observedGeneration is 2)"},
		{"a phase none of the expressions names", rolloutLike(2, "2", "ScaledDown"), check.Pending,
			"current is not true yet: status.phase == 'Healthy'"},
		{"no status.phase yet", object("argoproj.io/v1alpha1", "Rollout", 1, m{}), check.Pending,
			"its inProgress expression cannot be evaluated on it (no such key: phase)"},
		{"no status yet", object("argoproj.io/v1alpha1", "Rollout", 1, nil), check.Pending,
			"its inProgress expression cannot be evaluated on it (no such attribute(s): status)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := rs.Judge(tc.obj, customKind)
			if v.State != tc.state || v.Rule != label || !strings.Contains(v.Message, tc.msg) {
				t.Errorf("Judge = %v %q (rule %q), want %v with %q", v.State, v.Message, v.Rule, tc.state, tc.msg)
			}
		})
	}
	// Other kinds are not the rule's.
	if v := rs.Judge(certificateLike(cond("Ready", "True", "", "")), customKind); v.Rule != "kstatus" || v.State != check.Met {
		t.Errorf("a Certificate with a Rollout rule: %+v", v)
	}
}

// TestRuleMatchesGroupAndKind: as in Flux, the version of a rule's
// apiVersion does not have to be the object's.
func TestRuleMatchesGroupAndKind(t *testing.T) {
	rs := mustParse(t, strings.Replace(rolloutRules, "argoproj.io/v1alpha1", "argoproj.io/v1", 1))
	v := rs.Judge(rolloutLike(2, "2", "Healthy"), customKind)
	if v.State != check.Met || !strings.HasPrefix(v.Rule, "health rule") {
		t.Errorf("a rule for argoproj.io/v1 on an argoproj.io/v1alpha1 object: %+v", v)
	}
	other := rolloutLike(2, "2", "Healthy")
	other.SetAPIVersion("rollouts.example.com/v1alpha1")
	if v := rs.Judge(other, customKind); v.Rule != "kstatus" {
		t.Errorf("a Rollout of another group: %+v", v)
	}
}

// TestRulesWinOverKstatus: a rule decides even where kstatus could, and
// for built-in kinds too.
func TestRulesWinOverKstatus(t *testing.T) {
	rs := mustParse(t, `
- apiVersion: cert-manager.io/v1
  kind: Certificate
  current: status.conditions.exists(c, c.type == 'Ready' && c.status == 'True') && has(status.notAfter)
- apiVersion: v1
  kind: Service
  current: spec.type != 'LoadBalancer' || status.?loadBalancer.?ingress.orValue([]).size() > 0
- apiVersion: networking.k8s.io/v1
  kind: Ingress
  current: status.?loadBalancer.?ingress.orValue([]).exists(i, has(i.ip) || has(i.hostname))
`)
	cert := certificateLike(cond("Ready", "True", "", ""))
	if v := rs.Judge(cert, customKind); v.State != check.Pending || v.Rule != "health rule rules.yaml#1 (Certificate.cert-manager.io)" {
		t.Errorf("Certificate Ready without notAfter: %+v", v)
	}
	cert.Object["status"].(m)["notAfter"] = "2027-01-01T00:00:00Z"
	if v := rs.Judge(cert, customKind); v.State != check.Met {
		t.Errorf("Certificate Ready with notAfter: %+v", v)
	}
	svc := builtIn("v1", "Service", m{"type": "LoadBalancer", "clusterIP": "10.0.0.7"}, m{"loadBalancer": m{}})
	if v := rs.Judge(svc, builtInKind); v.State != check.Pending || v.Rule != "health rule rules.yaml#2 (Service)" {
		t.Errorf("LoadBalancer without ingress: %+v", v)
	}
	svc.Object["status"] = m{"loadBalancer": m{"ingress": []any{m{"ip": "192.0.2.10"}}}}
	if v := rs.Judge(svc, builtInKind); v.State != check.Met {
		t.Errorf("LoadBalancer with ingress: %+v", v)
	}
	ing := builtIn("networking.k8s.io/v1", "Ingress", m{}, nil)
	if v := rs.Judge(ing, builtInKind); v.State != check.Pending {
		t.Errorf("Ingress without status: %+v", v)
	}
	ing.Object["status"] = m{"loadBalancer": m{"ingress": []any{m{"hostname": "lb.example.com"}}}}
	if v := rs.Judge(ing, builtInKind); v.State != check.Met {
		t.Errorf("Ingress with an address: %+v", v)
	}
}

// TestFluxOrder: inProgress, then failed, then current; the first true
// decides; none true waits.
func TestFluxOrder(t *testing.T) {
	rs := mustParse(t, `
- apiVersion: example.com/v1
  kind: Thing
  inProgress: status.p
  failed: status.f
  current: status.c
`)
	for _, tc := range []struct {
		p, f, c bool
		want    check.State
	}{
		{true, true, true, check.Pending},
		{false, true, true, check.Failed},
		{false, false, true, check.Met},
		{false, false, false, check.Pending},
		{true, false, false, check.Pending},
	} {
		obj := object("example.com/v1", "Thing", 1, m{"p": tc.p, "f": tc.f, "c": tc.c})
		if v := rs.Judge(obj, customKind); v.State != tc.want {
			t.Errorf("inProgress %v failed %v current %v: %v (%s), want %v", tc.p, tc.f, tc.c, v.State, v.Message, tc.want)
		}
	}
	// A result of the wrong type, found only on evaluation, waits and says so.
	obj := object("example.com/v1", "Thing", 1, m{"p": "yes", "f": false, "c": true})
	if v := rs.Judge(obj, customKind); v.State != check.Pending || !strings.Contains(v.Message, "its inProgress expression yields string, not a boolean") {
		t.Errorf("a string result: %+v", v)
	}
	// The generation check comes first; a numeric observedGeneration too.
	obj = object("example.com/v1", "Thing", 2, m{"observedGeneration": int64(1), "p": false, "f": false, "c": true})
	if v := rs.Judge(obj, customKind); v.State != check.Pending || !strings.Contains(v.Message, "not observed generation 2") {
		t.Errorf("stale: %+v", v)
	}
	// An observedGeneration that is no number is left to the expressions.
	obj = object("example.com/v1", "Thing", 2, m{"observedGeneration": "5f8c6d", "p": false, "f": false, "c": true})
	if v := rs.Judge(obj, customKind); v.State != check.Met {
		t.Errorf("a hash as observedGeneration: %+v", v)
	}
}

// Rules copied from Flux's documentation, unchanged: the SealedSecret
// example of the Kustomization API reference and the cheatsheet's
// Cluster API Cluster.
const fluxDocsRules = `
- apiVersion: bitnami.com/v1alpha1
  kind: SealedSecret
  failed: status.conditions.filter(e, e.type == 'Synced').all(e, e.status == 'False')
  current: status.conditions.filter(e, e.type == 'Synced').all(e, e.status == 'True')
- apiVersion: cluster.x-k8s.io/v1beta1
  kind: Cluster
  failed: status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'False')
  current: status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')
- apiVersion: example.com/v1
  kind: Guarded
  inProgress: "has(status.observedGeneration) && metadata.generation != status.observedGeneration"
  failed: "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'False')"
  current: "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')"
`

func TestFluxDocsRulesWorkUnchanged(t *testing.T) {
	rs := mustParse(t, fluxDocsRules)
	sealed := func(conds ...any) *unstructured.Unstructured {
		return object("bitnami.com/v1alpha1", "SealedSecret", 1, m{"observedGeneration": int64(1), "conditions": conds})
	}
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want check.State
		msg  string
	}{
		{"Synced", sealed(cond("Synced", "True", "", "")), check.Met, "current is true"},
		{"not Synced", sealed(cond("Synced", "False", "ErrUnsealFailed", "no key could decrypt secret")), check.Failed, "failed is true"},
		{"no conditions yet", object("bitnami.com/v1alpha1", "SealedSecret", 1, m{}), check.Pending, "its failed expression cannot be evaluated on it (no such key: conditions)"},
		{"Cluster Ready", object("cluster.x-k8s.io/v1beta1", "Cluster", 4, m{"observedGeneration": int64(4), "conditions": []any{cond("Ready", "True", "", "")}}), check.Met, ""},
		{"Cluster stale", object("cluster.x-k8s.io/v1beta1", "Cluster", 4, m{"observedGeneration": int64(3), "conditions": []any{cond("Ready", "True", "", "")}}), check.Pending, "not observed generation 4"},
		{"Guarded without status", object("example.com/v1", "Guarded", 1, nil), check.Pending, "its inProgress expression cannot be evaluated on it (no such attribute(s): status)"},
		{"Guarded with empty conditions", object("example.com/v1", "Guarded", 1, m{"conditions": []any{}}), check.Failed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := rs.Judge(tc.obj, customKind)
			if v.State != tc.want || !strings.Contains(v.Message, tc.msg) {
				t.Errorf("Judge = %v %q, want %v with %q", v.State, v.Message, tc.want, tc.msg)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"bad YAML", "- apiVersion: a/v1\n  kind: [X\n", "rules.yaml: not valid YAML: line 1: did not find expected ',' or ']'"},
		{"empty file", "", "rules.yaml: is empty: a health-rules file is a YAML list"},
		{"only a comment", "# nothing\n", "rules.yaml: is empty"},
		{"a mapping", "apiVersion: a/v1\nkind: X\n", "rules.yaml:1: the top level is a mapping, not a list"},
		{"two documents", "- {apiVersion: a.io/v1, kind: X, current: 'true'}\n---\n- {}\n", "rules.yaml:2: a second YAML document"},
		{"an entry that is a string", "- Rollout\n", "rules.yaml:1: entry #1: is a string, not a mapping"},
		{"missing kind", "- apiVersion: argoproj.io/v1alpha1\n  current: status.phase == 'Healthy'\n", "rules.yaml:1: entry #1 (apiVersion argoproj.io/v1alpha1): has no kind"},
		{"missing apiVersion", "- kind: Rollout\n  current: status.phase == 'Healthy'\n", "rules.yaml:1: entry #1 (kind Rollout): has no apiVersion"},
		{"missing current", "- apiVersion: argoproj.io/v1alpha1\n  kind: Rollout\n  failed: status.phase == 'Degraded'\n",
			"rules.yaml:1: entry #1 (argoproj.io/v1alpha1 Rollout): has no current expression"},
		{"apiVersion without version", "- apiVersion: argoproj.io\n  kind: Rollout\n  current: 'true'\n", `apiVersion "argoproj.io" has no version`},
		{"apiVersion of three parts", "- apiVersion: a/b/c\n  kind: Rollout\n  current: 'true'\n", `apiVersion "a/b/c" is not GROUP/VERSION`},
		{"unknown field", "- apiVersion: argoproj.io/v1alpha1\n  kind: Rollout\n  expr: status.phase == 'Healthy'\n  current: 'true'\n",
			`rules.yaml:1: entry #1 (argoproj.io/v1alpha1 Rollout): unknown field "expr" (line 3)`},
		{"a field twice", "- apiVersion: a.io/v1\n  kind: X\n  current: 'true'\n  current: 'false'\n", "current is given twice (lines 3 and 4)"},
		{"a built-in workload", "- apiVersion: apps/v1\n  kind: Deployment\n  current: 'true'\n", "podsync judges a Deployment with its own rollout rule"},
		{"two rules for a kind", "- apiVersion: argoproj.io/v1alpha1\n  kind: Rollout\n  current: 'true'\n- apiVersion: argoproj.io/v1\n  kind: Rollout\n  current: 'false'\n",
			"rules.yaml:4: entry #2 (argoproj.io/v1 Rollout): a second rule for Rollout.argoproj.io: entry #1 of rules.yaml (line 1) already gives one"},
		{"CEL syntax error", "- apiVersion: argoproj.io/v1alpha1\n  kind: Rollout\n  current: status.phase == 'Healthy'\n  failed: status.phase = 'Degraded'\n",
			"rules.yaml:1: entry #1 (argoproj.io/v1alpha1 Rollout): failed (line 4): line 1, column 14: Syntax error: token recognition error at: '= ' (and 1 more error)"},
		{"CEL syntax error on a later line", "- apiVersion: a.io/v1\n  kind: X\n  current: |\n    status.ready &&\n    status.phase = 'Healthy'\n",
			"rules.yaml:1: entry #1 (a.io/v1 X): current (line 3): line 2, column 14: Syntax error"},
		{"not boolean: a string", "- apiVersion: argoproj.io/v1alpha1\n  kind: Rollout\n  current: \"'Healthy'\"\n",
			"current (line 3): is not a boolean expression: it yields string"},
		{"not boolean: a size", "- apiVersion: argoproj.io/v1alpha1\n  kind: Rollout\n  current: size(status.conditions)\n",
			"current (line 3): is not a boolean expression: it yields int"},
		{"an unknown function", "- apiVersion: argoproj.io/v1alpha1\n  kind: Rollout\n  current: isHealthy(status)\n",
			"current (line 3): line 1, column 10: undeclared reference to 'isHealthy'"},
		{"a word without quotes", "- apiVersion: argoproj.io/v1alpha1\n  kind: Rollout\n  current: status.phase == Healthy\n",
			"current (line 3): line 1, column 17: Healthy is not a field of the object (their names begin in lower case); a string is quoted: 'Healthy'"},
		{"an empty optional expression", "- apiVersion: a.io/v1\n  kind: X\n  current: 'true'\n  failed: ''\n", "failed is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("rules.yaml", []byte(tc.src))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n  %s\nwant it to hold\n  %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("the error is not one line: %q", err)
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	for _, src := range []string{
		"[]\n",
		"- apiVersion: v1\n  kind: Service\n  current: 'true'\n",
		// Types, comprehensions, optionals, the strings extension.
		"- apiVersion: a.io/v1\n  kind: X\n  current: type(status.phase) == string && status.phase.lowerAscii() == 'healthy'\n",
		"- apiVersion: a.io/v1\n  kind: X\n  current: status.?phase.orValue('') == 'Healthy'\n",
		"- apiVersion: a.io/v1\n  kind: X\n  current: status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')\n",
		"- apiVersion: a.io/v1\n  kind: X\n  current: sets.contains(status.tags, ['ready'])\n",
		"- apiVersion: a.io/v1\n  kind: X\n  current: data.enabled == 'true'\n", // a ConfigMap-like object: data, not status
		"- apiVersion: a.io/v1\n  kind: X\n  current: 'true'\n  failed: ~\n",
		"- &r\n  apiVersion: a.io/v1\n  kind: X\n  current: 'true'\n",
	} {
		if _, err := Parse("rules.yaml", []byte(src)); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.yaml")
	b := filepath.Join(dir, "b.yaml")
	if err := os.WriteFile(a, []byte(rolloutRules), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(fluxDocsRules), 0o600); err != nil {
		t.Fatal(err)
	}
	rs, err := Load([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if rs.Len() != 4 {
		t.Errorf("Len = %d, want 4", rs.Len())
	}
	if got := rs.Kinds()[1]; got != (schema.GroupKind{Group: "bitnami.com", Kind: "SealedSecret"}) {
		t.Errorf("Kinds()[1] = %v", got)
	}
	v := rs.Judge(object("bitnami.com/v1alpha1", "SealedSecret", 1, m{"conditions": []any{cond("Synced", "True", "", "")}}), customKind)
	if v.Rule != "health rule "+b+"#1 (SealedSecret.bitnami.com)" {
		t.Errorf("Rule = %q", v.Rule)
	}
	if _, err := Load([]string{a, a}); err == nil || !strings.Contains(err.Error(), "a second rule for Rollout.argoproj.io: entry #1 of "+a) {
		t.Errorf("the same file twice: %v", err)
	}
	if _, err := Load([]string{filepath.Join(dir, "missing.yaml")}); err == nil || err.Error() != filepath.Join(dir, "missing.yaml")+": cannot read the health rules: no such file or directory" {
		t.Errorf("a missing file: %v", err)
	}
	if rs, err := Load(nil); err != nil || rs.Len() != 0 {
		t.Errorf("Load(nil) = %v, %v", rs, err)
	}
}

// FuzzParse: no input makes Parse panic, and every error is one line
// that names the file.
func FuzzParse(f *testing.F) {
	for _, s := range []string{rolloutRules, fluxDocsRules, "", "[]", "- {}", "- apiVersion: a.io/v1\n  kind: X\n  current: status.phase ==\n", "{a: [", "- apiVersion: a.io/v1\n  kind: X\n  current: \"\\u00e9 == 1\"\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		rs, err := Parse("rules.yaml", []byte(src))
		if err != nil {
			if strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "rules.yaml") {
				t.Errorf("error %q", err)
			}
			return
		}
		for _, gk := range rs.Kinds() {
			obj := object(schema.GroupVersion{Group: gk.Group, Version: "v1"}.String(), gk.Kind, 1, m{"phase": "Healthy"})
			rs.Judge(obj, customKind)
		}
	})
}
