package checks

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// Custom resources whose controllers do not follow kstatus's conventions,
// played side by side with `kubectl wait --for=condition=Ready` where
// kubectl decides. The kinds have the status shapes of real operators:
// Cluster as Cluster API v1beta2 (observedGeneration, Available, no
// Ready while provisioning), Kafka as Strimzi (NotReady=True, then
// Ready=True), Application as Argo CD (no status subresource, a status in
// its schema), and ClusterWidget, cluster-scoped.

// moreKinds are the kinds of these tests, besides customKinds.
var moreKinds = []struct {
	kind, plural, scope string
	// subresource: the kind serves status as a subresource; schema: its
	// schema declares status.
	subresource, schema bool
}{
	{"Cluster", "clusters", "Namespaced", true, true},
	{"Kafka", "kafkas", "Namespaced", true, true},
	{"Application", "applications", "Namespaced", false, true},
	{"ClusterWidget", "clusterwidgets", "Cluster", true, true},
}

var installMoreCRDs sync.Once

// crdYAML is a CustomResourceDefinition of group group.
func crdYAML(group, kind, plural, scope string, subresource, schema bool) string {
	sub, props := "", ""
	if subresource {
		sub = "\n    subresources: {status: {}}"
	}
	if schema {
		props = `
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}`
	}
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[2]s.%[3]s}
spec:
  group: %[3]s
  scope: %[5]s
  names: {kind: %[1]s, plural: %[2]s, singular: %[4]s}
  versions:
  - name: v1
    served: true
    storage: true%[6]s
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true%[7]s
`, kind, plural, group, strings.ToLower(kind), scope, sub, props)
}

// withMoreCRDs installs moreKinds once and waits until they are served.
func withMoreCRDs(t *testing.T) {
	t.Helper()
	installMoreCRDs.Do(func() {
		var docs []string
		for _, k := range moreKinds {
			docs = append(docs, crdYAML(customGroup, k.kind, k.plural, k.scope, k.subresource, k.schema))
		}
		env.Apply(t, "default", strings.Join(docs, "---\n"))
		for _, k := range moreKinds {
			env.Kubectl(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/"+k.plural+"."+customGroup)
		}
	})
}

// kubectlRun is a kubectl command running beside podsync.
type kubectlRun struct {
	done   chan struct{}
	result harness.Result
}

// startKubectl starts the pinned kubectl with args.
func startKubectl(t *testing.T, args ...string) *kubectlRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	cmd := env.Command(ctx, nil, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	k := &kubectlRun{done: make(chan struct{})}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	go func() {
		defer cancel()
		err := cmd.Wait()
		k.result = harness.Result{Code: harness.ExitCode(err), Stdout: stdout.String(), Stderr: stderr.String(), Took: time.Since(start)}
		close(k.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-k.done
	})
	return k
}

// exited reports whether the command has ended.
func (k *kubectlRun) exited() bool {
	select {
	case <-k.done:
		return true
	default:
		return false
	}
}

// wait waits for the command's end.
func (k *kubectlRun) wait(t *testing.T, limit time.Duration) harness.Result {
	t.Helper()
	select {
	case <-k.done:
		return k.result
	case <-time.After(limit):
		t.Fatalf("kubectl did not end within %s", limit)
	}
	return harness.Result{}
}

// setStatusMain plays an operator that writes status through the main
// resource (its kind has no status subresource).
func setStatusMain(t *testing.T, ns, kind, name, status string) {
	t.Helper()
	env.Kubectl(t, "patch", "-n", ns, strings.ToLower(kind)+"."+customGroup, name, "--type=merge", "-p", `{"status":`+status+`}`)
}

// TestCustomResourceFallbackIsNoVerdict: a status with an observed
// generation and conditions, none of them Ready, is kstatus's fallback
// "Resource is current", not a verdict: podsync waits beside kubectl
// wait, says what is missing, and passes with kubectl once the operator
// reports Ready.
func TestCustomResourceFallbackIsNoVerdict(t *testing.T) {
	withMoreCRDs(t)
	cases := []struct {
		name, kind, waiting, ready, want string
	}{
		{name: "cluster api cluster provisioning", kind: "Cluster",
			waiting: `{"observedGeneration":1,"conditions":[{"type":"Available","status":"False","reason":"NotAvailable","message":"Control plane not yet initialized","lastTransitionTime":"2026-01-01T00:00:00Z"},{"type":"InfrastructureReady","status":"True","reason":"Ready","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`,
			ready:   `{"observedGeneration":1,"conditions":[{"type":"Available","status":"True","reason":"Available","lastTransitionTime":"2026-01-01T00:00:00Z"},{"type":"Ready","status":"True","reason":"Ready","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`,
			want:    "no Ready condition; conditions: Available=False (NotAvailable: Control plane not yet initialized), InfrastructureReady=True (Ready)"},
		{name: "strimzi kafka not ready", kind: "Kafka",
			waiting: `{"observedGeneration":1,"conditions":[{"type":"NotReady","status":"True","reason":"InvalidResourceException","message":"Unsupported Kafka.spec.kafka.version: 2.0.0","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`,
			ready:   `{"observedGeneration":1,"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`,
			want:    "no Ready condition; conditions: NotReady=True (InvalidResourceException: Unsupported Kafka.spec.kafka.version: 2.0.0)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			manifest := writeFile(t, "m.yaml", custom(c.kind, "x", "{replicas: 1}"))
			env.Kubectl(t, "apply", "-n", ns, "-f", manifest)
			setStatus(t, ns, c.kind, "x", c.waiting)
			if got := kstatusOf(t, ns, strings.ToLower(c.kind)+"."+customGroup, "x"); got != "Current" {
				t.Fatalf("kstatus says %q: the case is not its fallback", got)
			}
			s := env.Start(t, "-n", ns, "-f", manifest, "--until", "ready", "--timeout", "2m", "--progress-interval", "1s")
			k := startKubectl(t, "wait", "-n", ns, "--for=condition=Ready", "--timeout=2m", "-f", manifest)
			s.WaitStderr(`no Ready condition`, time.Minute)
			time.Sleep(2 * time.Second)
			if s.Exited() {
				t.Fatalf("podsync decided on kstatus's fallback\n%s", s.Dump())
			}
			if k.exited() {
				t.Fatalf("kubectl wait decided before Ready: %s", k.result)
			}
			written := time.Now()
			setStatus(t, ns, c.kind, "x", c.ready)
			r := s.Wait(time.Minute)
			kr := k.wait(t, time.Minute)
			t.Logf("podsync: exit %d, %s after Ready; kubectl wait: exit %d\n%s", r.Code, time.Since(written).Round(time.Millisecond), kr.Code, r.Stderr)
			wantVerdict(t, r, 0, "met")
			wantStderr(t, r, c.want)
			if kr.Code != 0 {
				t.Errorf("kubectl wait: %s", kr)
			}
		})
	}
}

// TestCustomResourceStaleCondition: after a spec change, the previous
// generation's Ready=True (its own observedGeneration is older) is not
// counted, as kubectl wait does not count it, until the operator reports
// on the new generation.
func TestCustomResourceStaleCondition(t *testing.T) {
	withCRDs(t)
	ns := env.Namespace(t)
	env.Apply(t, ns, custom("Certificate", "tls", "{dnsNames: [a.example]}"))
	setStatus(t, ns, "Certificate", "tls", `{"conditions":[{"type":"Ready","status":"True","reason":"Ready","message":"Certificate is up to date and has not expired","observedGeneration":1,"lastTransitionTime":"2026-01-01T00:00:00Z"}]}`)
	manifest := writeFile(t, "m.yaml", custom("Certificate", "tls", "{dnsNames: [a.example, b.example]}"))
	env.Kubectl(t, "apply", "-n", ns, "-f", manifest)
	if gen := env.KubectlOut(t, "get", "-n", ns, "certificate."+customGroup, "tls", "-o", "jsonpath={.metadata.generation}"); gen != "2" {
		t.Fatalf("generation %q, want 2", gen)
	}
	s := env.Start(t, "-n", ns, "-f", manifest, "--until", "ready", "--timeout", "2m", "--progress-interval", "1s")
	k := startKubectl(t, "wait", "-n", ns, "--for=condition=Ready", "--timeout=2m", "-f", manifest)
	time.Sleep(3 * time.Second)
	if s.Exited() {
		t.Fatalf("podsync passed on the previous generation's Ready=True\n%s", s.Dump())
	}
	if k.exited() {
		t.Fatalf("kubectl wait decided on the previous generation's Ready=True: %s", k.result)
	}
	written := time.Now()
	setStatus(t, ns, "Certificate", "tls", `{"conditions":[{"type":"Ready","status":"True","reason":"Ready","message":"Certificate is up to date and has not expired","observedGeneration":2,"lastTransitionTime":"2026-01-01T00:00:00Z"}]}`)
	r := s.Wait(time.Minute)
	kr := k.wait(t, time.Minute)
	t.Logf("podsync: exit %d, %s after Ready of generation 2; kubectl wait: exit %d\n%s", r.Code, time.Since(written).Round(time.Millisecond), kr.Code, r.Stderr)
	wantVerdict(t, r, 0, "met")
	wantStderr(t, r, "certificate.podsync.example.com/tls: Ready=True is for generation 1, not the current 2: podsync waits for its controller to report on generation 2")
	if kr.Code != 0 {
		t.Errorf("kubectl wait: %s", kr)
	}
}

// TestHealthRuleKindMatchesNothing: a rule whose kind has a typo is named
// at start, before the objects it was meant for are judged without it.
func TestHealthRuleKindMatchesNothing(t *testing.T) {
	withCRDs(t)
	ns := env.Namespace(t)
	manifest := writeFile(t, "m.yaml", custom("Rollout", "web", "{replicas: 1}"))
	env.Kubectl(t, "apply", "-n", ns, "-f", manifest)
	rules := writeFile(t, "rules.yaml", strings.Replace(rolloutRules, "kind: Rollout", "kind: Rolout", 1))
	r := check(t, "-n", ns, "-f", manifest, "--until", "ready", "--timeout", "3s", "--health-rules", rules)
	t.Logf("%s", r)
	wantVerdict(t, r, 3, "not met")
	line := `health rule ` + rules + `#1 (Rolout.podsync.example.com) matches no kind the cluster serves: group "podsync.example.com" has no kind Rolout`
	wantStderr(t, r, line)
	if first, _, _ := strings.Cut(r.Stderr, "\n"); !strings.Contains(first, line) {
		t.Errorf("the rule is not named first\n%s", r.Stderr)
	}
}

// TestKindServedLate: a CustomResourceDefinition and its object in one
// manifest, applied after the gate started: the kind is looked up again
// and its object judged once served.
func TestKindServedLate(t *testing.T) {
	ns := env.Namespace(t)
	group := ns + ".late.example.com"
	crd := crdYAML(group, "Gadget", "gadgets", "Namespaced", true, true)
	obj := fmt.Sprintf("apiVersion: %s/v1\nkind: Gadget\nmetadata: {name: g}\nspec: {size: 1}\n", group)
	manifest := writeFile(t, "all.yaml", crd+"---\n"+obj)
	t.Cleanup(func() { _, _ = env.KubectlErr("delete", "crd", "gadgets."+group, "--wait=false") })
	s := env.Start(t, "-n", ns, "-f", manifest, "--until", "ready", "--timeout", "90s", "--progress-interval", "1s")
	s.WaitStderr(`does not serve `+group+`/v1`, time.Minute)
	time.Sleep(2 * time.Second)
	env.Apply(t, ns, crd)
	env.Kubectl(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/gadgets."+group)
	env.Apply(t, ns, obj)
	time.Sleep(2 * time.Second)
	if s.Exited() {
		t.Fatalf("podsync ended before the object had a status\n%s", s.Dump())
	}
	written := time.Now()
	env.Kubectl(t, "patch", "-n", ns, "gadget."+group, "g", "--subresource=status", "--type=merge", "-p",
		`{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Ready","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`)
	kr := env.Podsync(t, time.Minute, "-n", ns, "-f", manifest, "--until", "ready", "--timeout", "30s")
	r := s.Wait(2 * time.Minute)
	t.Logf("exit %d, %s after Ready\n%s", r.Code, time.Since(written).Round(time.Millisecond), r.Stderr)
	wantVerdict(t, r, 0, "met")
	if kr.Code != 0 {
		t.Errorf("a gate started after the kind was served: %s", kr)
	}
}

// TestStatusInSchemaWaits: a kind without a status subresource whose
// schema declares status (its controller writes status through the main
// resource) waits for a status, where it used to be met as it appeared.
func TestStatusInSchemaWaits(t *testing.T) {
	withMoreCRDs(t)
	ns := env.Namespace(t)
	manifest := writeFile(t, "m.yaml", custom("Application", "app", "{project: default}"))
	env.Kubectl(t, "apply", "-n", ns, "-f", manifest)
	s := env.Start(t, "-n", ns, "-f", manifest, "--until", "ready", "--timeout", "2m", "--progress-interval", "1s")
	k := startKubectl(t, "wait", "-n", ns, "--for=condition=Ready", "--timeout=2m", "-f", manifest)
	s.WaitStderr(`it has no status yet`, time.Minute)
	time.Sleep(time.Second)
	if s.Exited() {
		t.Fatalf("podsync was met before the controller wrote a status\n%s", s.Dump())
	}
	setStatusMain(t, ns, "Application", "app", `{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`)
	r := s.Wait(time.Minute)
	kr := k.wait(t, time.Minute)
	t.Logf("%s", r.Stderr)
	wantVerdict(t, r, 0, "met")
	if kr.Code != 0 {
		t.Errorf("kubectl wait: %s", kr)
	}
}

// TestClusterScopedWithNamespace: a cluster-scoped object whose manifest
// carries a namespace (kustomize's namespace: adds one) is judged as
// kubectl apply treats it: the namespace is ignored.
func TestClusterScopedWithNamespace(t *testing.T) {
	withMoreCRDs(t)
	ns := env.Namespace(t)
	name := "cw-" + ns
	manifest := writeFile(t, "m.yaml", fmt.Sprintf("apiVersion: %s/v1\nkind: ClusterWidget\nmetadata: {name: %s, namespace: %s}\nspec: {size: 1}\n", customGroup, name, ns))
	env.Kubectl(t, "apply", "-f", manifest)
	t.Cleanup(func() { _, _ = env.KubectlErr("delete", "clusterwidget."+customGroup, name, "--wait=false") })
	s := env.Start(t, "-n", ns, "-f", manifest, "--until", "ready", "--timeout", "2m", "--progress-interval", "1s")
	time.Sleep(2 * time.Second)
	if s.Exited() {
		t.Fatalf("podsync ended before the object had a status\n%s", s.Dump())
	}
	env.Kubectl(t, "patch", "clusterwidget."+customGroup, name, "--subresource=status", "--type=merge", "-p",
		`{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Ready","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`)
	r := s.Wait(time.Minute)
	t.Logf("%s", r.Stderr)
	wantVerdict(t, r, 0, "met")
}

// TestConversionWebhookDown: an object that the API server cannot convert
// to the version asked for (its kind's conversion webhook is down) is
// left out of lists; the gate says the cause, as kubectl get does,
// rather than that the object does not exist.
func TestConversionWebhookDown(t *testing.T) {
	ns := env.Namespace(t)
	group := ns + ".conv.example.com"
	crd := fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: queues.%[1]s}
spec:
  group: %[1]s
  scope: Namespaced
  names: {kind: Queue, plural: queues, singular: queue}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig: {url: "https://127.0.0.1:1/convert"}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
  - name: v2
    served: true
    storage: false
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, group)
	t.Cleanup(func() { _, _ = env.KubectlErr("delete", "crd", "queues."+group, "--wait=false") })
	env.Apply(t, ns, crd)
	env.Kubectl(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/queues."+group)
	env.Apply(t, ns, fmt.Sprintf("apiVersion: %s/v1\nkind: Queue\nmetadata: {name: orders}\nspec: {size: 1}\n", group))
	manifest := writeFile(t, "v2.yaml", fmt.Sprintf("apiVersion: %s/v2\nkind: Queue\nmetadata: {name: orders}\nspec: {size: 1}\n", group))
	out, err := env.KubectlErr("get", "-n", ns, "-f", manifest)
	if err == nil || !strings.Contains(out, "conversion webhook for") {
		t.Fatalf("kubectl get -f v2.yaml: %v\n%s", err, out)
	}
	t.Logf("kubectl get: %s", out)
	r := check(t, "-n", ns, "-f", manifest, "--until", "ready", "--timeout", "5s")
	t.Logf("%s", r)
	wantVerdict(t, r, 3, "not met")
	wantStderr(t, r, "queue."+group+"/orders: not met: cannot be read: conversion webhook for "+group+"/v1, Kind=Queue failed")
}
