package health

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// TestDocsRules: every rule docs/health.md shows compiles, the worked
// example is the one the tests judge, and the lone expressions of the
// page compile as a rule's current and judge as the page says.
func TestDocsRules(t *testing.T) {
	data, err := os.ReadFile("../../docs/health.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(doc, -1)
	var lists, lone int
	for _, b := range blocks {
		src := b[1]
		switch {
		case strings.Contains(src, "- apiVersion:"):
			lists++
			if _, err := Parse("health.md", []byte(src)); err != nil {
				t.Errorf("a rules file of docs/health.md: %v\n%s", err, src)
			}
		case strings.Contains(src, "current:") || strings.Contains(src, "inProgress:"):
			for _, line := range strings.Split(src, "\n") {
				line = strings.TrimSpace(line)
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				field, expr, ok := strings.Cut(line, ": ")
				if !ok {
					t.Errorf("docs/health.md: %q is not FIELD: EXPRESSION", line)
					continue
				}
				lone++
				entry := "- apiVersion: example.com/v1\n  kind: Thing\n  current: " + expr + "\n"
				if _, err := Parse("health.md", []byte(entry)); err != nil {
					t.Errorf("docs/health.md: %s %q: %v", field, expr, err)
				}
			}
		}
	}
	if lists < 3 || lone < 3 {
		t.Errorf("found %d rules files and %d lone expressions in docs/health.md", lists, lone)
	}
	example := strings.TrimPrefix(rolloutRules, "# Argo Rollouts: status.phase says it all.\n")
	if !strings.Contains(doc, "```yaml\n# rules.yaml\n"+example+"```") {
		t.Errorf("docs/health.md does not show the worked example the tests judge:\n%s", example)
	}

	// The lone expressions mean what the page says of absent fields.
	rs := mustParse(t, `
- apiVersion: example.com/v1
  kind: Conditions
  current: status.?conditions.orValue([]).exists(c, c.type == 'Ready' && c.status == 'True')
- apiVersion: example.com/v1
  kind: Replicas
  current: status.?readyReplicas.orValue(0) == spec.replicas
`)
	if v := rs.Judge(object("example.com/v1", "Conditions", 1, m{}), customKind); v.State != check.Pending || !strings.HasPrefix(v.Message, "current is not true yet") {
		t.Errorf("no conditions: %+v", v)
	}
	if v := rs.Judge(object("example.com/v1", "Replicas", 1, m{"replicas": int64(3)}), customKind); v.State != check.Pending || !strings.HasPrefix(v.Message, "current is not true yet") {
		t.Errorf("no readyReplicas: %+v", v)
	}
	if v := rs.Judge(object("example.com/v1", "Replicas", 1, m{"readyReplicas": int64(3)}), customKind); v.State != check.Met {
		t.Errorf("3 ready replicas: %+v", v)
	}
}
