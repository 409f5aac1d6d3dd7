package contexts

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A custom resource whose kind one context serves and the others do not:
// the gate is met in the first and not in the others, which are named;
// --skip-unavailable does not hide them, since they can be used and lack
// the kind.
func TestKindServedInOneContextOnly(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	crd := write("crd.yaml", `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.contexts.example.com}
spec:
  group: contexts.example.com
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets, singular: gadget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`)
	gadget := write("gadget.yaml", "apiVersion: contexts.example.com/v1\nkind: Gadget\nmetadata: {name: g}\nspec: {size: 1}\n")
	first := env.Contexts[0]
	env.Kubectl(t, "apply", "--context", first, "-f", crd)
	t.Cleanup(func() { _, _ = env.KubectlErr("delete", "--context", first, "-f", crd, "--wait=false") })
	env.Kubectl(t, "wait", "--context", first, "--for=condition=Established", "--timeout=60s", "crd/gadgets.contexts.example.com")
	env.Kubectl(t, "apply", "--context", first, "-n", ns, "-f", gadget)
	env.Kubectl(t, "patch", "--context", first, "-n", ns, "gadget.contexts.example.com", "g", "--subresource=status", "--type=merge",
		"-p", `{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Done","message":"gadget ready"}]}}`)
	for _, extra := range [][]string{nil, {"--skip-unavailable"}} {
		args := append([]string{"--context", all, "-n", ns, "-f", gadget, "--until", "ready", "--timeout", "6s"}, extra...)
		r := env.Podsync(t, 2*time.Minute, args...)
		wantExit(t, r, 3)
		wantStderr(t, r, "Verdict:  not met (exit 3)", first+"  met")
		for _, c := range env.Contexts[1:] {
			wantStderr(t, r, "gadget.contexts.example.com/g --context "+c+": not met: the cluster does not serve contexts.example.com/v1")
		}
	}
}
