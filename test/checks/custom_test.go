package checks

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// Custom resources are judged by kstatus's conventions or by health rules
// in Flux's format. The CustomResourceDefinitions below have the shapes of
// real operators' kinds; the tests play the operator by writing the status
// subresource while podsync waits, and compare podsync's verdict with
// kstatus's own Compute on the same object.

const customGroup = "podsync.example.com"

// customKinds are the kinds of the tests: Rollout as Argo Rollouts has it
// (observedGeneration a string, status.phase), Certificate as cert-manager
// (a Ready condition), Database following kstatus's Reconciling/Stalled
// conventions, and Widget, which has no status at all.
var customKinds = []struct {
	kind, plural string
	status       bool
}{
	{"Rollout", "rollouts", true},
	{"Certificate", "certificates", true},
	{"Database", "databases", true},
	{"Widget", "widgets", false},
}

var installCRDs sync.Once

// withCRDs installs the test kinds once and waits until they are served.
func withCRDs(t *testing.T) {
	t.Helper()
	installCRDs.Do(func() {
		var docs []string
		for _, k := range customKinds {
			sub := ""
			if k.status {
				sub = "\n    subresources: {status: {}}"
			}
			docs = append(docs, fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[2]s.%[3]s}
spec:
  group: %[3]s
  scope: Namespaced
  names: {kind: %[1]s, plural: %[2]s, singular: %[4]s}
  versions:
  - name: v1
    served: true
    storage: true%[5]s
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, k.kind, k.plural, customGroup, strings.ToLower(k.kind), sub))
		}
		env.Apply(t, "default", strings.Join(docs, "---\n"))
		for _, k := range customKinds {
			env.Kubectl(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/"+k.plural+"."+customGroup)
		}
	})
}

// custom is one object of a test kind, without status.
func custom(kind, name, spec string) string {
	return fmt.Sprintf("apiVersion: %s/v1\nkind: %s\nmetadata: {name: %s}\nspec: %s\n", customGroup, kind, name, spec)
}

// setStatus plays the operator: it writes obj's status subresource.
func setStatus(t *testing.T, ns, kind, name, status string) {
	t.Helper()
	env.Kubectl(t, "patch", "-n", ns, strings.ToLower(kind)+"."+customGroup, name, "--subresource=status", "--type=merge", "-p", `{"status":`+status+`}`)
}

// kstatusOf is kstatus's verdict on the object as the cluster holds it.
func kstatusOf(t *testing.T, ns, resource, name string) string {
	t.Helper()
	out := env.KubectlOut(t, "get", "-n", ns, resource, name, "-o", "json")
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON([]byte(out)); err != nil {
		t.Fatalf("decode %s/%s: %v", resource, name, err)
	}
	res, err := kstatus.Compute(&u)
	if err != nil {
		return "error: " + err.Error()
	}
	return string(res.Status)
}

// writeFile writes a file of the test's own.
func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// rolloutRules judge the Rollout kind as its users write them for Flux.
const rolloutRules = `- apiVersion: ` + customGroup + `/v1
  kind: Rollout
  current: status.phase == 'Healthy'
  inProgress: status.phase == 'Progressing'
  failed: status.phase == 'Degraded'
`

// TestCustomResourcesAgreeWithKstatus: an operator's status decides the
// check as kstatus reads it, at the moment the operator writes it; where
// the conventions cannot tell (a string observedGeneration), a health rule
// decides, and without one the wait is explained, never silent.
func TestCustomResourcesAgreeWithKstatus(t *testing.T) {
	withCRDs(t)
	cases := []struct {
		name, kind, status string
		rules              string
		want               int
		wantKstatus        string
		wantStderr         []string
	}{
		{name: "certificate ready", kind: "Certificate",
			status: `{"observedGeneration":1,"conditions":[{"type":"Ready","status":"True","reason":"Issued","message":"Certificate is up to date and has not expired"}]}`,
			want:   0, wantKstatus: "Current",
			wantStderr: []string{"certificate.podsync.example.com/x: Resource is Ready (kstatus) in"}},
		{name: "database stalled", kind: "Database",
			status: `{"observedGeneration":1,"conditions":[{"type":"Stalled","status":"True","reason":"NoQuota","message":"quota exceeded for volumes"}]}`,
			want:   4, wantKstatus: "Failed",
			wantStderr: []string{"quota exceeded for volumes"}},
		{name: "database reconciled", kind: "Database",
			status: `{"observedGeneration":1,"conditions":[{"type":"Reconciling","status":"False","reason":"Done"},{"type":"Ready","status":"True","reason":"Done","message":"ready"}]}`,
			want:   0, wantKstatus: "Current"},
		{name: "rollout healthy with a rule", kind: "Rollout", rules: rolloutRules,
			status: `{"observedGeneration":"1","phase":"Healthy"}`,
			want:   0, wantKstatus: "error",
			wantStderr: []string{"rollout.podsync.example.com/x:", "health rule"}},
		{name: "rollout degraded with a rule", kind: "Rollout", rules: rolloutRules,
			status: `{"observedGeneration":"1","phase":"Degraded","message":"ProgressDeadlineExceeded"}`,
			want:   4, wantKstatus: "error"},
		{name: "rollout without a rule", kind: "Rollout",
			status: `{"observedGeneration":"1","phase":"Healthy"}`,
			want:   3, wantKstatus: "error",
			wantStderr: []string{"rollout.podsync.example.com/x: not met:", "--health-rules"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			manifest := writeFile(t, "m.yaml", custom(c.kind, "x", "{replicas: 1}"))
			env.Kubectl(t, "apply", "-n", ns, "-f", manifest)
			args := []string{"-n", ns, "-f", manifest, "--until", "ready", "--timeout", "12s"}
			if c.rules != "" {
				args = append(args, "--health-rules", writeFile(t, "rules.yaml", c.rules))
			}
			s := env.Start(t, args...)
			// Before the operator speaks, nothing is decided.
			time.Sleep(2 * time.Second)
			if s.Exited() {
				t.Fatalf("podsync decided before the operator wrote a status\n%s", s.Dump())
			}
			written := time.Now()
			setStatus(t, ns, c.kind, "x", c.status)
			r := s.Wait(time.Minute)
			took := time.Since(written)
			t.Logf("exit %d, %s after the status was written\n%s", r.Code, took.Round(time.Millisecond), r.Stderr)
			if r.Code != c.want {
				t.Errorf("exit %d, want %d\n%s", r.Code, c.want, r)
			}
			if got := kstatusOf(t, ns, strings.ToLower(c.kind)+"."+customGroup, "x"); !strings.HasPrefix(got, c.wantKstatus) {
				t.Errorf("kstatus says %q, want %q", got, c.wantKstatus)
			}
			if c.want != 3 && took > 5*time.Second {
				t.Errorf("the verdict came %s after the status that decides it", took)
			}
			for _, w := range c.wantStderr {
				if !strings.Contains(r.Stderr, w) {
					t.Errorf("stderr lacks %q\n%s", w, r.Stderr)
				}
			}
		})
	}
}

// TestCustomResourcePodsFailFast: the pods a custom resource makes through
// a ReplicaSet it controls are shown and judged: one in CrashLoopBackOff
// fails the gate at once, while the resource's own status still says it
// progresses.
func TestCustomResourcePodsFailFast(t *testing.T) {
	withCRDs(t)
	ns := env.Namespace(t)
	env.Apply(t, ns, custom("Rollout", "web", "{replicas: 1}"))
	uid := strings.TrimSpace(env.KubectlOut(t, "get", "-n", ns, "rollout."+customGroup, "web", "-o", "jsonpath={.metadata.uid}"))
	setStatus(t, ns, "Rollout", "web", `{"observedGeneration":"1","phase":"Progressing"}`)
	rules := writeFile(t, "rules.yaml", rolloutRules)
	s := env.Start(t, "-n", ns, "rollout."+customGroup+"/web", "--until", "ready", "--timeout", "2m", "--health-rules", rules)
	// The operator makes its ReplicaSet, whose pod crash-loops.
	env.Apply(t, ns, fmt.Sprintf(`apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-1
  ownerReferences:
  - {apiVersion: %s/v1, kind: Rollout, name: web, uid: %s, controller: true}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
%s    spec:
      containers: [{name: app, image: registry.example/crash:1}]
`, customGroup, uid, annotationsYAML("      ", state("crashloop"))))
	r := s.Wait(3 * time.Minute)
	t.Logf("%s", r)
	wantVerdict(t, r, 4, "failed")
	wantStderr(t, r, "CrashLoopBackOff", "rollout.podsync.example.com/web")
	wantLines(t, r.Stdout, `^\S+\s+web-1-\S+\s+`, 1)
}

// TestMixedManifest: one gate over a Deployment, a Rollout judged by its
// rule, a Certificate, a ConfigMap and a claim bound by the controller.
func TestMixedManifest(t *testing.T) {
	withCRDs(t)
	ns := env.Namespace(t)
	pv := "pv-" + ns
	env.Apply(t, "default", fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: %s}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  hostPath: {path: /tmp/%s}
  claimRef: {namespace: %s, name: data}
`, pv, pv, ns))
	t.Cleanup(func() { _, _ = env.KubectlErr("delete", "pv", pv, "--wait=false") })
	manifest := strings.Join([]string{
		deploymentYAML("web", "registry.example/web:1", 2, nil),
		custom("Rollout", "api", "{replicas: 1}"),
		custom("Certificate", "tls", "{dnsNames: [web.example]}"),
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n",
		"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec:\n  accessModes: [ReadWriteOnce]\n  storageClassName: \"\"\n  resources: {requests: {storage: 1Gi}}\n",
	}, "---\n")
	path := writeFile(t, "app.yaml", manifest)
	env.Kubectl(t, "apply", "-n", ns, "-f", path)
	rules := writeFile(t, "rules.yaml", rolloutRules)
	s := env.Start(t, "-n", ns, "-f", path, "--until", "ready", "--timeout", "3m", "--health-rules", rules, "-o", "json")
	time.Sleep(2 * time.Second)
	setStatus(t, ns, "Certificate", "tls", `{"conditions":[{"type":"Ready","status":"True","reason":"Issued","message":"issued"}]}`)
	if s.Exited() {
		t.Fatalf("the gate passed before the Rollout was healthy\n%s", s.Dump())
	}
	setStatus(t, ns, "Rollout", "api", `{"observedGeneration":"1","phase":"Healthy"}`)
	r := s.Wait(3 * time.Minute)
	t.Logf("%s", r.Stderr)
	wantVerdict(t, r, 0, "met")
	sum := lastLineJSON(t, r)
	got := map[string]string{}
	for _, tg := range sum.Targets {
		got[tg.Kind+"/"+tg.Name] = tg.Verdict + " " + tg.Rule
	}
	want := map[string]string{
		"Deployment/web": "met ", "Rollout/api": "met health rule", "Certificate/tls": "met kstatus",
		"ConfigMap/settings": "met kstatus", "PersistentVolumeClaim/data": "met kstatus",
	}
	for k, w := range want {
		if !strings.HasPrefix(got[k], w) {
			t.Errorf("target %s: %q, want %q…", k, got[k], w)
		}
	}
}

// replicaSetOf is a ReplicaSet of the Rollout web at a revision, as its
// operator makes it; annotations go on the pod template.
func replicaSetOf(uid, name string, revision, replicas int, image string, annotations map[string]string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: %[1]s
  annotations: {rollout.argoproj.io/revision: "%[2]d"}
  ownerReferences:
  - {apiVersion: %[3]s/v1, kind: Rollout, name: web, uid: %[4]s, controller: true}
spec:
  replicas: %[5]d
  selector: {matchLabels: {app: web, rev: "%[2]d"}}
  template:
    metadata:
      labels: {app: web, rev: "%[2]d"}
%[6]s    spec:
      containers: [{name: app, image: %[7]s}]
`, name, revision, customGroup, uid, replicas, annotationsYAML("      ", annotations), image)
}

// TestCustomResourceFixForward: a fix rolled out by an operator over
// crash-looping pods of its older ReplicaSet is judged as the operator
// judges it: the old pods never fail the gate; the Rollout's own status
// decides.
func TestCustomResourceFixForward(t *testing.T) {
	withCRDs(t)
	ns := env.Namespace(t)
	env.Apply(t, ns, custom("Rollout", "web", "{image: registry.example/crash:1}"))
	uid := strings.TrimSpace(env.KubectlOut(t, "get", "-n", ns, "rollout."+customGroup, "web", "-o", "jsonpath={.metadata.uid}"))
	setStatus(t, ns, "Rollout", "web", `{"observedGeneration":"1","phase":"Progressing"}`)
	env.Apply(t, ns, replicaSetOf(uid, "web-1", 1, 1, "registry.example/crash:1", state("crashloop")))
	waitPods(t, ns, "rev=1", 1, "crash-looping", func(p *corev1.Pod) bool { return restarts(p) > 0 })
	// The fix: the spec changes (generation 2) before podsync starts,
	// and the operator has not acted on it yet.
	env.Apply(t, ns, custom("Rollout", "web", "{image: registry.example/web:2}"))
	rules := writeFile(t, "rules.yaml", rolloutRules)
	s := env.Start(t, "-n", ns, "rollout."+customGroup+"/web", "--until", "ready", "--timeout", "2m", "--health-rules", rules, "--max-restarts", "1")
	time.Sleep(2 * time.Second)
	env.Apply(t, ns, replicaSetOf(uid, "web-2", 2, 1, "registry.example/web:2", nil))
	setStatus(t, ns, "Rollout", "web", `{"observedGeneration":"2","phase":"Progressing"}`)
	waitPods(t, ns, "rev=2", 1, "ready", harness.IsReady)
	if s.Exited() {
		t.Fatalf("the gate ended while the fix rolled out\n%s", s.Dump())
	}
	env.Apply(t, ns, replicaSetOf(uid, "web-1", 1, 0, "registry.example/crash:1", state("crashloop")))
	setStatus(t, ns, "Rollout", "web", `{"observedGeneration":"2","phase":"Healthy"}`)
	r := s.Wait(2 * time.Minute)
	t.Logf("%s", r)
	wantVerdict(t, r, 0, "met")
}

// TestCustomResourceUntilGone: --until gone waits for an object judged by
// its status to be gone itself, as kubectl wait --for=delete does, here
// held by a finalizer until its operator lets it go.
func TestCustomResourceUntilGone(t *testing.T) {
	withCRDs(t)
	ns := env.Namespace(t)
	manifest := writeFile(t, "cert.yaml", fmt.Sprintf("apiVersion: %s/v1\nkind: Certificate\nmetadata: {name: tls, finalizers: [podsync.example.com/hold]}\nspec: {}\n", customGroup))
	env.Kubectl(t, "apply", "-n", ns, "-f", manifest)
	env.Kubectl(t, "delete", "-n", ns, "-f", manifest, "--wait=false")
	s := env.Start(t, "-n", ns, "-f", manifest, "--until", "gone", "--timeout", "2m")
	time.Sleep(3 * time.Second)
	if s.Exited() {
		t.Fatalf("--until gone ended while the object was still there\n%s", s.Dump())
	}
	released := time.Now()
	env.Kubectl(t, "patch", "-n", ns, "certificate."+customGroup, "tls", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	r := s.Wait(time.Minute)
	t.Logf("%s", r)
	wantVerdict(t, r, 0, "met")
	wantStderr(t, r, "certificate.podsync.example.com/tls: was deleted")
	if took := time.Since(released); took > 10*time.Second {
		t.Errorf("the verdict came %s after the object went", took)
	}
}
