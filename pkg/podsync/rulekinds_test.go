package podsync

import (
	"bytes"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/health"
)

func TestSayUnmatchedRules(t *testing.T) {
	rules, err := health.Parse("rules.yaml", []byte(`- apiVersion: argoproj.io/v1alpha1
  kind: Rollout
  current: status.phase == 'Healthy'
- apiVersion: argoproj.io/v1alpha1
  kind: Rolout
  current: status.phase == 'Healthy'
- apiVersion: argoprj.io/v1alpha1
  kind: Rollout
  current: status.phase == 'Healthy'
- apiVersion: cert-manager.io/v1
  kind: Certificate
  current: status.phase == 'Healthy'
`))
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientset()
	c.Resources = []*metav1.APIResourceList{
		{GroupVersion: "argoproj.io/v1alpha1", APIResources: []metav1.APIResource{
			{Name: "rollouts", Kind: "Rollout"}, {Name: "rollouts/status", Kind: "Rollout"}}},
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod"}}},
	}
	var out bytes.Buffer
	sayUnmatchedRules(&out, "context a: ", rules, c.Discovery())
	got := out.String()
	want := []string{
		`podsync: context a: health rule rules.yaml#2 (Rolout.argoproj.io) matches no kind the cluster serves: group "argoproj.io" has no kind Rolout`,
		`podsync: context a: health rule rules.yaml#3 (Rollout.argoprj.io) matches no kind the cluster serves: the cluster serves no group "argoprj.io" (it serves Rollout.argoproj.io)`,
		`podsync: context a: health rule rules.yaml#4 (Certificate.cert-manager.io) matches no kind the cluster serves: the cluster serves no group "cert-manager.io";`,
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("lacks %q\n%s", w, got)
		}
	}
	if strings.Contains(got, "#1") || strings.Count(got, "\n") != 3 {
		t.Errorf("want three lines, none for the rule that matches:\n%s", got)
	}
	out.Reset()
	sayUnmatchedRules(&out, "", nil, c.Discovery())
	if out.Len() != 0 {
		t.Errorf("without rules: %q", out.String())
	}
}
