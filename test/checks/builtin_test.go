package checks

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// The built-in health rules, end to end: CustomResourceDefinitions with
// the real groups, kinds and versions of the operators (and Crossplane's
// CRD categories), statuses written as each operator writes them, and no
// --health-rules given.

// operatorKinds are real operators' kinds, as their CRDs declare them.
var operatorKinds = []struct {
	group, version, kind, plural, scope string
	categories                          []string
}{
	{"kafka.strimzi.io", "v1beta2", "Kafka", "kafkas", "Namespaced", []string{"strimzi"}},
	{"cluster.x-k8s.io", "v1beta2", "Cluster", "clusters", "Namespaced", []string{"cluster-api"}},
	{"s3.aws.upbound.io", "v1beta1", "Bucket", "buckets", "Cluster", []string{"crossplane", "managed", "aws"}},
	{"cert-manager.io", "v1", "Certificate", "certificates", "Namespaced", []string{"cert-manager"}},
}

var installOperatorCRDs sync.Once

// withOperatorCRDs installs operatorKinds once and waits until they are
// served.
func withOperatorCRDs(t *testing.T) {
	t.Helper()
	installOperatorCRDs.Do(func() {
		var docs []string
		for _, k := range operatorKinds {
			docs = append(docs, fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[2]s.%[3]s}
spec:
  group: %[3]s
  scope: %[5]s
  names: {kind: %[1]s, plural: %[2]s, singular: %[4]s, categories: [%[7]s]}
  versions:
  - name: %[6]s
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, k.kind, k.plural, k.group, strings.ToLower(k.kind), k.scope, k.version, strings.Join(k.categories, ", ")))
		}
		env.Apply(t, "default", strings.Join(docs, "---\n"))
		for _, k := range operatorKinds {
			env.Kubectl(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/"+k.plural+"."+k.group)
		}
	})
}

// operatorObject is a manifest of one object of an operator's kind.
func operatorObject(t *testing.T, apiVersion, kind, name string) string {
	return writeFile(t, strings.ToLower(kind)+".yaml", fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata: {name: %s}\nspec: {replicas: 1}\n", apiVersion, kind, name))
}

// setOperatorStatus plays the operator: it writes the status subresource.
func setOperatorStatus(t *testing.T, ns, resource, name, status string) {
	t.Helper()
	args := []string{"patch", resource, name, "--subresource=status", "--type=merge", "-p", `{"status":` + status + `}`}
	if ns != "" {
		args = append(args, "-n", ns)
	}
	env.Kubectl(t, args...)
}

const (
	kafkaNotReady = `{"observedGeneration":1,"conditions":[{"type":"NotReady","status":"True","reason":"TimeoutException","message":"Exceeded timeout of 300000ms while waiting for the brokers to be ready","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`
	kafkaCreating = `{"observedGeneration":1,"conditions":[{"type":"NotReady","status":"True","reason":"Creating","message":"Kafka cluster is being deployed","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`
	kafkaReady    = `{"observedGeneration":1,"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`
	capiProvision = `{"observedGeneration":1,"phase":"Provisioning","conditions":[{"type":"Available","status":"False","reason":"NotAvailable","message":"Control plane not yet initialized","lastTransitionTime":"2026-01-01T00:00:00Z"},{"type":"InfrastructureReady","status":"True","reason":"Ready","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`
	capiAvailable = `{"observedGeneration":1,"phase":"Provisioned","conditions":[{"type":"Available","status":"True","reason":"Available","lastTransitionTime":"2026-01-01T00:00:00Z"},{"type":"InfrastructureReady","status":"True","reason":"Ready","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`
	bucketRefused = `{"conditions":[{"type":"Ready","status":"True","reason":"Available","lastTransitionTime":"2026-01-01T00:00:00Z"},{"type":"Synced","status":"False","reason":"ReconcileError","message":"update failed: cannot change the value of the argument \"region\"","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`
)

// TestBuiltInRuleKafkaFails: a Strimzi Kafka whose reconcile failed
// (NotReady=True, an exception's name) fails the gate, where kstatus's
// conventions alone would wait for a Ready condition until the timeout.
func TestBuiltInRuleKafkaFails(t *testing.T) {
	withOperatorCRDs(t)
	ns := env.Namespace(t)
	manifest := operatorObject(t, "kafka.strimzi.io/v1beta2", "Kafka", "events")
	env.Kubectl(t, "apply", "-n", ns, "-f", manifest)
	setOperatorStatus(t, ns, "kafka.kafka.strimzi.io", "events", kafkaNotReady)
	r := check(t, "-n", ns, "-f", manifest, "--until", "ready", "--timeout", "20s")
	t.Logf("stderr:\n%s", r.Stderr)
	wantVerdict(t, r, 4, "failed")
	wantStderr(t, r, "kafka.kafka.strimzi.io/events: failed: NotReady=True (TimeoutException: Exceeded timeout of 300000ms", "(built-in health rule (Kafka.kafka.strimzi.io))")
}

// TestBuiltInRuleKafkaWaitsThenMet: NotReady with reason Creating waits;
// Ready=True is met.
func TestBuiltInRuleKafkaWaitsThenMet(t *testing.T) {
	withOperatorCRDs(t)
	ns := env.Namespace(t)
	manifest := operatorObject(t, "kafka.strimzi.io/v1beta2", "Kafka", "events")
	env.Kubectl(t, "apply", "-n", ns, "-f", manifest)
	setOperatorStatus(t, ns, "kafka.kafka.strimzi.io", "events", kafkaCreating)
	s := env.Start(t, "-n", ns, "-f", manifest, "--until", "ready", "--timeout", "2m", "--progress-interval", "1s")
	s.WaitStderr("current is not true yet", time.Minute)
	if s.Exited() {
		t.Fatalf("podsync decided on a Kafka being created\n%s", s.Dump())
	}
	setOperatorStatus(t, ns, "kafka.kafka.strimzi.io", "events", kafkaReady)
	r := s.Wait(time.Minute)
	wantVerdict(t, r, 0, "met")
	wantStderr(t, r, "kafka.kafka.strimzi.io/events: current is true:", "(built-in health rule (Kafka.kafka.strimzi.io))")
}

// TestBuiltInRuleClusterAPIv1beta2: a v1beta2 Cluster still provisioning
// (Available=False) is not met; once Available=True it is, though it
// never has a Ready condition (kstatus's conventions alone wait for one).
func TestBuiltInRuleClusterAPIv1beta2(t *testing.T) {
	withOperatorCRDs(t)
	ns := env.Namespace(t)
	manifest := operatorObject(t, "cluster.x-k8s.io/v1beta2", "Cluster", "prod")
	env.Kubectl(t, "apply", "-n", ns, "-f", manifest)
	setOperatorStatus(t, ns, "cluster.cluster.x-k8s.io", "prod", capiProvision)
	r := check(t, "-n", ns, "-f", manifest, "--until", "ready", "--timeout", "3s")
	t.Logf("stderr:\n%s", r.Stderr)
	wantVerdict(t, r, 3, "not met")
	wantStderr(t, r, "cluster.cluster.x-k8s.io/prod: not met: current is not true yet", "(built-in health rule (Cluster.cluster.x-k8s.io))")

	s := env.Start(t, "-n", ns, "-f", manifest, "--until", "ready", "--timeout", "2m", "--progress-interval", "1s")
	s.WaitStderr("current is not true yet", time.Minute)
	setOperatorStatus(t, ns, "cluster.cluster.x-k8s.io", "prod", capiAvailable)
	r = s.Wait(time.Minute)
	t.Logf("stderr:\n%s", r.Stderr)
	wantVerdict(t, r, 0, "met")
	wantStderr(t, r, "cluster.cluster.x-k8s.io/prod: current is true:")
}

// TestBuiltInRuleCrossplaneCategory: a managed resource of a provider
// podsync does not name (its CRD has the category managed) whose update
// the provider refused (Ready=True, Synced=False) fails the gate; kstatus
// calls it current on its Ready condition.
func TestBuiltInRuleCrossplaneCategory(t *testing.T) {
	withOperatorCRDs(t)
	name := env.Namespace(t) // a unique name for a cluster-scoped object
	manifest := operatorObject(t, "s3.aws.upbound.io/v1beta1", "Bucket", name)
	env.Kubectl(t, "apply", "-f", manifest)
	t.Cleanup(func() { _, _ = env.KubectlErr("delete", "bucket.s3.aws.upbound.io", name, "--wait=false") })
	setOperatorStatus(t, "", "bucket.s3.aws.upbound.io", name, bucketRefused)
	if got := kstatusOf(t, "", "bucket.s3.aws.upbound.io", name); got != "Current" {
		t.Fatalf("kstatus says %q", got)
	}
	r := check(t, "-f", manifest, "--until", "ready", "--timeout", "20s")
	wantVerdict(t, r, 4, "failed")
	wantStderr(t, r, "bucket.s3.aws.upbound.io/"+name+": failed: Synced=False (ReconcileError: update failed", "(built-in health rule (category managed, composite, claim))")
}

// kafkaOverride is a user's rule for Kafka that replaces the built-in one.
const kafkaOverride = `- apiVersion: kafka.strimzi.io/v1beta2
  kind: Kafka
  current: status.conditions.exists(c, c.type == 'NotReady' && c.reason == 'TimeoutException')
`

// TestUserRuleOverridesBuiltIn: a --health-rules entry for Kafka decides
// instead of the built-in rule, and --show-health-rules, with no cluster
// to reach, says which rule replaces which.
func TestUserRuleOverridesBuiltIn(t *testing.T) {
	withOperatorCRDs(t)
	ns := env.Namespace(t)
	manifest := operatorObject(t, "kafka.strimzi.io/v1beta2", "Kafka", "events")
	env.Kubectl(t, "apply", "-n", ns, "-f", manifest)
	setOperatorStatus(t, ns, "kafka.kafka.strimzi.io", "events", kafkaNotReady)
	rules := writeFile(t, "rules.yaml", kafkaOverride)
	r := check(t, "-n", ns, "-f", manifest, "--until", "ready", "--timeout", "20s", "--health-rules", rules)
	wantVerdict(t, r, 0, "met")
	wantStderr(t, r, "(health rule "+rules+"#1 (Kafka.kafka.strimzi.io))")

	show := env.PodsyncEnv(t, runLimit, []string{"KUBECONFIG=" + writeFile(t, "none", "")}, "--show-health-rules", "--health-rules", rules)
	t.Logf("--show-health-rules: exit %d\n%s", show.Code, show.Stdout)
	if show.Code != 0 || show.Stderr != "" {
		t.Fatalf("--show-health-rules: %s", show)
	}
	for _, want := range []string{
		"# Kafka.kafka.strimzi.io: --health-rules " + rules + ", entry #1; replaces the built-in rule from Strimzi 0.47",
		"# Cluster.cluster.x-k8s.io: built-in, from Cluster API v1.10",
		"# Certificate.cert-manager.io: built-in, from cert-manager v1.18",
	} {
		if !strings.Contains(show.Stdout, want) {
			t.Errorf("--show-health-rules lacks %q", want)
		}
	}
	bad := env.Podsync(t, runLimit, "--show-health-rules", "--health-rules", writeFile(t, "bad.yaml", "- kind: Kafka\n"))
	if bad.Code != 2 || !strings.Contains(bad.Stderr, "has no apiVersion") {
		t.Errorf("--show-health-rules with a bad file: %s", bad)
	}
}

// TestBuiltInRuleCertificateGenerations: cert-manager removes Issuing
// once a certificate is issued, and keeps the previous spec's Ready=True
// until it has looked at the new one. The built-in rule waits through
// the issuance of generation 2, saying which condition is of generation
// 1, and is met on Ready=True of generation 2 with no Issuing left.
func TestBuiltInRuleCertificateGenerations(t *testing.T) {
	withOperatorCRDs(t)
	ns := env.Namespace(t)
	obj := func(names string) string {
		return fmt.Sprintf("apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: web-tls}\nspec: {secretName: web-tls, dnsNames: [%s]}\n", names)
	}
	env.Apply(t, ns, obj("a.example"))
	setOperatorStatus(t, ns, "certificate.cert-manager.io", "web-tls", `{"conditions":[{"type":"Ready","status":"True","reason":"Ready","message":"Certificate is up to date and has not expired","observedGeneration":1,"lastTransitionTime":"2026-01-01T00:00:00Z"}]}`)
	manifest := writeFile(t, "cert.yaml", obj("a.example, b.example"))
	env.Kubectl(t, "apply", "-n", ns, "-f", manifest)
	s := env.Start(t, "-n", ns, "-f", manifest, "--until", "ready", "--timeout", "2m", "--progress-interval", "1s")
	s.WaitStderr("Ready=True is for generation 1, not the current 2", time.Minute)
	setOperatorStatus(t, ns, "certificate.cert-manager.io", "web-tls", `{"conditions":[{"type":"Ready","status":"False","reason":"DoesNotExist","observedGeneration":2,"lastTransitionTime":"2026-01-01T00:00:00Z"},{"type":"Issuing","status":"True","reason":"Reissuing","message":"Issuing certificate as Secret was previously issued","observedGeneration":2,"lastTransitionTime":"2026-01-01T00:00:00Z"}]}`)
	s.WaitStderr("inProgress is true", time.Minute)
	if s.Exited() {
		t.Fatalf("podsync decided while the certificate is issued\n%s", s.Dump())
	}
	setOperatorStatus(t, ns, "certificate.cert-manager.io", "web-tls", `{"conditions":[{"type":"Ready","status":"True","reason":"Ready","message":"Certificate is up to date and has not expired","observedGeneration":2,"lastTransitionTime":"2026-01-01T00:00:00Z"}]}`)
	r := s.Wait(time.Minute)
	t.Logf("stderr:\n%s", r.Stderr)
	wantVerdict(t, r, 0, "met")
	wantStderr(t, r, "certificate.cert-manager.io/web-tls: current is true:", "(built-in health rule (Certificate.cert-manager.io))")
}
