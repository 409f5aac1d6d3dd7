package health

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// fixtureFile is one file of testdata/builtin: status histories of one
// operator's kind, in the shapes its upstream project writes, each with
// the verdict the built-in rule must give and, where Argo CD has a test
// object of the same shape, the health Argo CD expects.
type fixtureFile struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Categories []string `yaml:"categories"`
	// Kinds are more kinds the same cases run for: "APIVERSION KIND
	// [CATEGORY]".
	Kinds []string      `yaml:"kinds"`
	Cases []fixtureCase `yaml:"cases"`
}

type fixtureCase struct {
	Name       string         `yaml:"name"`
	APIVersion string         `yaml:"apiVersion"`
	Generation int64          `yaml:"generation"`
	Status     map[string]any `yaml:"status"`
	Want       string         `yaml:"want"`
	ArgoCD     string         `yaml:"argocd"`
	Differs    string         `yaml:"differs"`
	Note       string         `yaml:"note"`
}

// verdictWord is how a fixture names a check.State.
var verdictWord = map[check.State]string{check.Met: "met", check.Pending: "waits", check.Failed: "fails"}

// argoVerdict is Argo CD's health as a gate reads it.
var argoVerdict = map[string]string{"Healthy": "met", "Progressing": "waits", "Degraded": "fails", "Suspended": "waits", "Missing": "waits"}

func loadFixtures(t *testing.T) map[string]fixtureFile {
	t.Helper()
	paths, err := filepath.Glob("testdata/builtin/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	out := map[string]fixtureFile{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var f fixtureFile
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&f); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[filepath.Base(p)] = f
	}
	return out
}

// fixtureObject is the object as an informer hands it over (JSON
// numbers that are integers are int64).
func fixtureObject(t *testing.T, apiVersion, kind string, generation int64, status map[string]any) *unstructured.Unstructured {
	t.Helper()
	obj := map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": "web", "namespace": "shop", "generation": generation}}
	if status != nil {
		obj["status"] = status
	}
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return u
}

// fixtureKind is one kind a fixture file's cases run for.
type fixtureKind struct {
	apiVersion, kind string
	categories       []string
}

func (f fixtureFile) kinds(t *testing.T) []fixtureKind {
	out := []fixtureKind{{f.APIVersion, f.Kind, f.Categories}}
	for _, k := range f.Kinds {
		parts := strings.Fields(k)
		if len(parts) < 2 {
			t.Fatalf("kinds entry %q is not APIVERSION KIND [CATEGORY]", k)
		}
		out = append(out, fixtureKind{parts[0], parts[1], parts[2:]})
	}
	return out
}

// TestBuiltInRulesOnFixtures runs each built-in rule on every status of
// its kind's fixtures. A verdict that is not Argo CD's expected health for
// the same shape must say why (differs), and docs/health.md lists it.
func TestBuiltInRulesOnFixtures(t *testing.T) {
	rs, err := (*Rules)(nil).WithBuiltIn()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/health.md")
	if err != nil {
		t.Fatal(err)
	}
	for file, f := range loadFixtures(t) {
		for _, k := range f.kinds(t) {
			for _, c := range f.Cases {
				t.Run(k.kind+"/"+c.Name, func(t *testing.T) {
					av := k.apiVersion
					if c.APIVersion != "" {
						av = c.APIVersion
					}
					u := fixtureObject(t, av, k.kind, max(c.Generation, 1), c.Status)
					v := rs.Judge(u, Discovery{HasStatus: true, Categories: k.categories})
					if !strings.HasPrefix(v.Rule, "built-in health rule") {
						t.Fatalf("%s: judged by %q, not a built-in rule", file, v.Rule)
					}
					if got := verdictWord[v.State]; got != c.Want {
						t.Errorf("%s: %s, want %s: %s", file, got, c.Want, v.Message)
					}
					if c.ArgoCD == "" {
						return
					}
					argo, ok := argoVerdict[c.ArgoCD]
					if !ok {
						t.Fatalf("%s: unknown Argo CD health %q", file, c.ArgoCD)
					}
					switch {
					case argo != c.Want && c.Differs == "":
						t.Errorf("%s: Argo CD expects %s (%s), the rule %s, and the case does not say why", file, c.ArgoCD, argo, c.Want)
					case argo == c.Want && c.Differs != "":
						t.Errorf("%s: says it differs from Argo CD, which agrees", file)
					case c.Differs != "" && !bytes.Contains(doc, []byte(c.Differs)):
						t.Errorf("%s: docs/health.md does not list the difference %q", file, c.Differs)
					}
				})
			}
		}
	}
}

// TestBuiltInRulesHaveFixtures: every built-in rule has a source, and its
// kind's fixtures cover no status, waiting, met and failed.
func TestBuiltInRulesHaveFixtures(t *testing.T) {
	bi, err := builtInRules()
	if err != nil {
		t.Fatal(err)
	}
	covered := map[schema.GroupKind]map[string]bool{}
	categories := map[string]bool{}
	for _, f := range loadFixtures(t) {
		for _, k := range f.kinds(t) {
			gv, _ := schema.ParseGroupVersion(k.apiVersion)
			gk := schema.GroupKind{Group: gv.Group, Kind: k.kind}
			if covered[gk] == nil {
				covered[gk] = map[string]bool{}
			}
			for _, c := range f.Cases {
				covered[gk][c.Want] = true
				if c.Status == nil {
					covered[gk]["no status"] = true
				}
			}
			for _, c := range k.categories {
				categories[c] = true
			}
		}
	}
	for _, r := range append(append([]*rule{}, bi.order...), bi.byCategory...) {
		if r.source == "" || r.exprs[2] == nil {
			t.Errorf("%s: no source or no current expression", r.label())
		}
		if len(r.categories) > 0 {
			for _, c := range r.categories {
				if !categories[c] {
					t.Errorf("%s: no fixture of category %s", r.label(), c)
				}
			}
			continue
		}
		for _, want := range []string{"no status", "waits", "met", "fails"} {
			if !covered[r.gk][want] {
				t.Errorf("%s: no fixture that %s", r.label(), want)
			}
		}
	}
}

// TestUserRuleOverridesBuiltIn: a --health-rules entry for a kind that
// has a built-in rule replaces it, and Show says so.
func TestUserRuleOverridesBuiltIn(t *testing.T) {
	user := mustParse(t, rolloutRules)
	rs, err := user.WithBuiltIn()
	if err != nil {
		t.Fatal(err)
	}
	v := rs.Judge(rolloutLike(2, "2", "Healthy"), customKind)
	if v.Rule != "health rule rules.yaml#1 (Rollout.argoproj.io)" {
		t.Errorf("a Rollout with a user rule: judged by %q", v.Rule)
	}
	v = rs.Judge(certificateLike(cond("Ready", "True", "", "")), customKind)
	if v.Rule != "built-in health rule (Certificate.cert-manager.io)" || v.State != check.Met {
		t.Errorf("a Certificate: %+v", v)
	}
	if rs.Len() != 1 || len(rs.Kinds()) != 1 {
		t.Errorf("Len %d, Kinds %v: the user's rules alone", rs.Len(), rs.Kinds())
	}
	var out strings.Builder
	if err := rs.Show(&out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"# Rollout.argoproj.io: --health-rules rules.yaml, entry #1; replaces the built-in rule from Argo Rollouts v1.8",
		"# Certificate.cert-manager.io: built-in, from cert-manager v1.18",
		"# - categories: managed, composite, claim",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("Show lacks %q:\n%s", want, s)
		}
	}
	if strings.Count(s, "kind: Rollout\n") != 1 {
		t.Errorf("Show prints the overridden built-in Rollout rule:\n%s", s)
	}
	// What Show prints is a rules file podsync reads back, the same rules.
	back, err := Parse("shown.yaml", []byte(s))
	if err != nil {
		t.Fatalf("Show's output does not read back: %v\n%s", err, s)
	}
	bi, _ := builtInRules()
	if back.Len() != len(bi.order) {
		t.Errorf("read back %d rules, want %d", back.Len(), len(bi.order))
	}
}

// TestBuiltInCategoryRule: the Crossplane rule judges a kind by its CRD's
// categories, never a built-in kind, and a kind's own rule comes first.
func TestBuiltInCategoryRule(t *testing.T) {
	rs, err := (*Rules)(nil).WithBuiltIn()
	if err != nil {
		t.Fatal(err)
	}
	obj := object("s3.aws.upbound.io/v1beta1", "Bucket", 1, m{"conditions": []any{cond("Ready", "True", "", "")}})
	if v := rs.Judge(obj, Discovery{Categories: []string{"managed"}}); v.Rule != "built-in health rule (category managed, composite, claim)" || v.State != check.Met {
		t.Errorf("a managed resource: %+v", v)
	}
	if v := rs.Judge(obj, Discovery{}); v.Rule != RuleKstatus {
		t.Errorf("no category: %+v", v)
	}
	if v := rs.Judge(obj, Discovery{BuiltIn: true, Categories: []string{"managed"}}); v.Rule != RuleKstatus {
		t.Errorf("a built-in kind: %+v", v)
	}
}

// TestPublishedFluxRulesWrong backs what docs/health.md says of two rules
// Flux publishes: the cheatsheet's Cluster API rule fails a cluster still
// provisioning, and RFC-0009's Certificate rule stays in progress once
// cert-manager has removed the Issuing condition of a finished issuance
// (all() over an empty list is true).
func TestPublishedFluxRulesWrong(t *testing.T) {
	rs := mustParse(t, `
- apiVersion: cluster.x-k8s.io/v1beta1
  kind: Cluster
  failed: status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'False')
  current: status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')
- apiVersion: cert-manager.io/v1
  kind: Certificate
  inProgress: "status.conditions.filter(e, e.type == 'Issuing').all(e, e.observedGeneration == metadata.generation && e.status == 'True')"
  failed: "status.conditions.filter(e, e.type == 'Ready').all(e, e.observedGeneration == metadata.generation && e.status == 'False')"
  current: "status.conditions.filter(e, e.type == 'Ready').all(e, e.observedGeneration == metadata.generation && e.status == 'True')"
`)
	provisioning := fixtureObject(t, "cluster.x-k8s.io/v1beta1", "Cluster", 1, map[string]any{"observedGeneration": 1, "phase": "Provisioning",
		"conditions": []any{map[string]any{"type": "Ready", "status": "False", "severity": "Info", "reason": "WaitingForControlPlane"}}})
	if v := rs.Judge(provisioning, customKind); v.State != check.Failed {
		t.Errorf("the cheatsheet's Cluster rule on a v1beta1 cluster provisioning: %+v", v)
	}
	v1beta2 := fixtureObject(t, "cluster.x-k8s.io/v1beta2", "Cluster", 1, map[string]any{"observedGeneration": 1, "phase": "Provisioning",
		"conditions": []any{map[string]any{"type": "Available", "status": "False", "reason": "NotAvailable"}}})
	if v := rs.Judge(v1beta2, customKind); v.State != check.Failed {
		t.Errorf("the cheatsheet's Cluster rule on a v1beta2 cluster provisioning: %+v", v)
	}
	issued := fixtureObject(t, "cert-manager.io/v1", "Certificate", 1, map[string]any{
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Ready", "observedGeneration": 1}}})
	if v := rs.Judge(issued, customKind); v.State != check.Pending || !strings.HasPrefix(v.Message, "inProgress is true") {
		t.Errorf("RFC-0009's Certificate rule on an issued certificate: %+v", v)
	}
	// The built-in rules decide both.
	bi, err := (*Rules)(nil).WithBuiltIn()
	if err != nil {
		t.Fatal(err)
	}
	if v := bi.Judge(provisioning, customKind); v.State != check.Pending {
		t.Errorf("the built-in Cluster rule on a cluster provisioning: %+v", v)
	}
	if v := bi.Judge(issued, customKind); v.State != check.Met {
		t.Errorf("the built-in Certificate rule on an issued certificate: %+v", v)
	}
}

// TestRuleSaysStaleConditions: a rule that waits because the conditions
// it reads are of an older generation says so.
func TestRuleSaysStaleConditions(t *testing.T) {
	rs, err := (*Rules)(nil).WithBuiltIn()
	if err != nil {
		t.Fatal(err)
	}
	v := rs.Judge(withConditionGeneration(2, cond("Ready", "True", "Ready", ""), 1), customKind)
	want := "current is not true yet: status.?conditions.orValue([]).exists(c, c.type == 'Ready' && c.status == 'True'); Ready=True is for generation 1, not the current 2"
	if v.State != check.Pending || v.Message != want {
		t.Errorf("Judge = %v %q, want waiting with %q", v.State, v.Message, want)
	}
}

// TestFailedQuotesConditions: a failed verdict on a status without a
// message quotes the conditions that say what went wrong.
func TestFailedQuotesConditions(t *testing.T) {
	rs, err := (*Rules)(nil).WithBuiltIn()
	if err != nil {
		t.Fatal(err)
	}
	kafka := fixtureObject(t, "kafka.strimzi.io/v1beta2", "Kafka", 1, map[string]any{"observedGeneration": 1, "conditions": []any{
		map[string]any{"type": "NotReady", "status": "True", "reason": "TimeoutException", "message": "Exceeded timeout of 300000ms"},
		map[string]any{"type": "Warning", "status": "True", "reason": "KafkaStorage", "message": "a warning is no failure"}}})
	v := rs.Judge(kafka, customKind)
	if v.State != check.Failed || !strings.HasPrefix(v.Message, "NotReady=True (TimeoutException: Exceeded timeout of 300000ms) (failed is true: ") {
		t.Errorf("Judge = %v %q", v.State, v.Message)
	}
}
