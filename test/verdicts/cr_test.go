package verdicts

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Custom resources of operators podsync has built-in health rules for.
// No operator runs: the play writes the status subresource in the
// operator's own dialect, and the judges are podsync (its built-in rule),
// `kubectl wait --for=condition=C` on the kind's readiness condition, and
// crRule, the operator's documented meaning restated here.

// crKind is one operator's kind and the condition kubectl waits for.
type crKind struct {
	group, version, kind, plural, waitFor string
}

var crKinds = map[string]crKind{
	"Certificate":   {"cert-manager.io", "v1", "Certificate", "certificates", "Ready"},
	"Kustomization": {"kustomize.toolkit.fluxcd.io", "v1", "Kustomization", "kustomizations", "Ready"},
	"Kafka":         {"kafka.strimzi.io", "v1beta2", "Kafka", "kafkas", "Ready"},
	// Cluster API v1beta2 has no Ready condition: Available says it.
	"Cluster": {"cluster.x-k8s.io", "v1beta2", "Cluster", "clusters", "Available"},
}

var crKindNames = []string{"Certificate", "Kustomization", "Kafka", "Cluster"}

func isCR(kind string) bool { _, ok := crKinds[kind]; return ok }

func (k crKind) gvr() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: k.group, Version: k.version, Resource: k.plural}
}

// The CR ops.
const (
	opStatus = "status" // status progressing|ready|failed|none [old]: the operator writes its status (old: for the generation before the newest)
	opBump   = "bump"   // a spec change: metadata.generation goes up
)

var crStatuses = []string{"progressing", "ready", "failed", "none"}

var installCRDs struct {
	once sync.Once
	err  error
}

// withCRDs installs the operators' CRDs once on the shared cluster.
func withCRDs(t *testing.T) {
	t.Helper()
	installCRDs.once.Do(func() {
		var docs []string
		for _, n := range crKindNames {
			k := crKinds[n]
			docs = append(docs, fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[2]s.%[3]s}
spec:
  group: %[3]s
  scope: Namespaced
  names: {kind: %[1]s, plural: %[2]s, singular: %[4]s}
  versions:
  - name: %[5]s
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
`, k.kind, k.plural, k.group, strings.ToLower(k.kind), k.version))
		}
		env.Apply(t, "default", strings.Join(docs, "---\n"))
		for _, n := range crKindNames {
			k := crKinds[n]
			if out, err := env.KubectlErr("wait", "--for=condition=Established", "--timeout=60s", "crd/"+k.plural+"."+k.group); err != nil {
				installCRDs.err = fmt.Errorf("CRD %s.%s not established: %w: %s", k.plural, k.group, err, out)
				return
			}
		}
	})
	if installCRDs.err != nil {
		t.Fatal(installCRDs.err)
	}
}

// crManifest is the object at generation 1.
func crManifest(k crKind) string {
	return fmt.Sprintf("apiVersion: %s/%s\nkind: %s\nmetadata:\n  name: %s\nspec:\n  rev: 1\n", k.group, k.version, k.kind, name)
}

// generateCR is a CR scenario: its statuses, spec changes, sleeps and
// checks.
func generateCR(r *rand.Rand) scenario {
	sc := scenario{kind: crKindNames[r.IntN(len(crKindNames))], opts: map[string]string{}}
	if r.IntN(2) == 0 {
		sc.steps = append(sc.steps, step{op: opStatus, args: []string{crStatuses[r.IntN(len(crStatuses))]}})
	}
	n := 3 + r.IntN(8)
	checks := 0
	for range n {
		var s step
		switch pick := r.IntN(15); {
		case pick < 6:
			s = step{op: opStatus, args: []string{crStatuses[r.IntN(len(crStatuses))]}}
			if r.IntN(4) == 0 {
				s.args = append(s.args, "old")
			}
		case pick < 8:
			s = step{op: opBump}
		case pick < 12:
			s = step{op: opSleep, args: []string{strconv.Itoa(200 + r.IntN(3000))}}
		default:
			if checks == 3 {
				continue
			}
			checks++
			s = checkStep(r)
		}
		sc.steps = append(sc.steps, s)
	}
	if checks == 0 {
		i := r.IntN(len(sc.steps) + 1)
		sc.steps = append(sc.steps[:i], append([]step{checkStep(r)}, sc.steps[i:]...)...)
	}
	return sc
}

// doCR plays a CR step: the operator writing its status, or a user
// changing the spec.
func (p *play) doCR(s step) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := p.dyn.Resource(crKinds[p.sc.kind].gvr()).Namespace(p.ns)
	var err error
	switch s.op {
	case opBump:
		var u *unstructured.Unstructured
		u, err = res.Patch(ctx, name, types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"rev":%d}}`, time.Now().UnixNano())), metav1.PatchOptions{})
		if err == nil {
			p.logf("bump: generation %d", u.GetGeneration())
			return
		}
	case opStatus:
		var u *unstructured.Unstructured
		u, err = res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			break
		}
		gen := u.GetGeneration()
		if len(s.args) > 1 && s.args[1] == "old" && gen > 1 {
			gen--
		}
		state := "none"
		if len(s.args) > 0 {
			state = s.args[0]
		}
		body := map[string]any{"status": crStatus(p.sc.kind, state, gen)}
		b, _ := json.Marshal(body)
		_, err = res.Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{}, "status")
		if err == nil {
			p.logf("%s: written for generation %d of %d", s, gen, u.GetGeneration())
			return
		}
	}
	p.logf("%s: %v", s, err)
}

// crStatus is the status an operator writes for gen in state, in its own
// words; nil removes the status. A merge patch replaces the conditions
// list whole.
func crStatus(kind, state string, gen int64) any {
	if state == "none" {
		return nil
	}
	cond := func(typ, status, reason, msg string) map[string]any {
		c := map[string]any{"type": typ, "status": status, "reason": reason, "message": msg, "lastTransitionTime": "2026-01-01T00:00:00Z"}
		if kind != "Kafka" { // Strimzi's conditions carry no generation
			c["observedGeneration"] = gen
		}
		return c
	}
	st := map[string]any{}
	var conds []any
	switch kind {
	case "Certificate":
		// cert-manager writes no status.observedGeneration: each
		// condition says its generation.
		switch state {
		case "progressing":
			conds = []any{cond("Ready", "False", "DoesNotExist", "Issuing certificate as Secret does not exist"), cond("Issuing", "True", "DoesNotExist", "Issuing certificate as Secret does not exist")}
		case "ready":
			conds = []any{cond("Ready", "True", "Ready", "Certificate is up to date and has not expired")}
		case "failed":
			conds = []any{cond("Ready", "False", "DoesNotExist", "Issuing certificate as Secret does not exist"), cond("Issuing", "False", "Failed", "The certificate request has failed to complete and will be retried")}
		}
	case "Kustomization":
		st["observedGeneration"] = gen
		switch state {
		case "progressing":
			conds = []any{cond("Reconciling", "True", "Progressing", "Reconciliation in progress"), cond("Ready", "Unknown", "Progressing", "Reconciliation in progress")}
		case "ready":
			conds = []any{cond("Ready", "True", "ReconciliationSucceeded", "Applied revision: main@sha1:0123")}
		case "failed":
			conds = []any{cond("Stalled", "True", "BuildFailed", "kustomize build failed"), cond("Ready", "False", "BuildFailed", "kustomize build failed")}
		}
	case "Kafka":
		st["observedGeneration"] = gen
		switch state {
		case "progressing":
			conds = []any{cond("NotReady", "True", "Creating", "Kafka cluster is being deployed")}
		case "ready":
			conds = []any{cond("Ready", "True", "", "")}
		case "failed":
			conds = []any{cond("NotReady", "True", "TimeoutException", "Exceeded timeout of 300000ms while waiting for the brokers to be ready")}
		}
	case "Cluster":
		st["observedGeneration"] = gen
		switch state {
		case "progressing":
			st["phase"] = "Provisioning"
			conds = []any{cond("Available", "False", "NotAvailable", "Control plane not yet initialized"), cond("RollingOut", "True", "RollingOut", "Rolling out")}
		case "ready":
			st["phase"] = "Provisioned"
			conds = []any{cond("Available", "True", "Available", ""), cond("RollingOut", "False", "NotRollingOut", "")}
		case "failed":
			st["phase"] = "Failed"
			conds = []any{cond("Available", "False", "NotAvailable", "infrastructure failed")}
		}
	}
	st["conditions"] = conds
	return st
}

// crRule is what the operator's status means on one state of the object,
// as its project documents it: "met", "failed" or "" (not yet). A
// status.observedGeneration other than metadata.generation, or a
// condition of another generation, speaks of an older spec and says
// nothing about the newest.
func crRule(u *unstructured.Unstructured) string {
	st, ok := u.Object["status"].(map[string]any)
	if !ok {
		return ""
	}
	gen := u.GetGeneration()
	if og, found, _ := unstructured.NestedInt64(st, "observedGeneration"); found && og != gen {
		return ""
	}
	conds := map[string]map[string]any{}
	list, _, _ := unstructured.NestedSlice(st, "conditions")
	for _, c := range list {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		if og, found, _ := unstructured.NestedInt64(m, "observedGeneration"); found && og != gen {
			continue
		}
		typ, _ := m["type"].(string)
		conds[typ] = m
	}
	is := func(typ, status string) bool { return conds[typ] != nil && conds[typ]["status"] == status }
	reason := func(typ string) string { r, _ := conds[typ]["reason"].(string); return r }
	switch u.GetKind() {
	case "Certificate":
		switch {
		case is("Issuing", "True"):
			return ""
		case is("Issuing", "False") && reason("Issuing") == "Failed":
			return "failed"
		case is("Ready", "True"):
			return "met"
		}
	case "Kustomization":
		switch {
		case is("Reconciling", "True"):
			return ""
		case is("Stalled", "True"):
			return "failed"
		case is("Ready", "True"):
			return "met"
		}
	case "Kafka":
		switch {
		case is("NotReady", "True") && reason("NotReady") != "Creating":
			return "failed"
		case is("Ready", "True"):
			return "met"
		}
	case "Cluster":
		phase, _ := st["phase"].(string)
		switch {
		case is("RollingOut", "True"):
			return ""
		case phase == "Failed":
			return "failed"
		case conds["Available"] != nil:
			if is("Available", "True") {
				return "met"
			}
		case is("Ready", "True"):
			return "met"
		}
	}
	return ""
}

// TestCRRule: the operators' meaning, on the statuses the play writes.
func TestCRRule(t *testing.T) {
	for _, kind := range crKindNames {
		k := crKinds[kind]
		for _, tc := range []struct {
			state   string
			gen, of int64
			want    string
		}{
			{"ready", 2, 2, "met"},
			{"ready", 1, 2, ""}, // an older generation's Ready says nothing of the newest
			{"progressing", 2, 2, ""},
			{"failed", 2, 2, "failed"},
			{"failed", 1, 2, ""},
			{"none", 2, 2, ""},
		} {
			obj := map[string]any{"apiVersion": k.group + "/" + k.version, "kind": kind, "metadata": map[string]any{"name": name, "generation": tc.of}}
			if st := crStatus(kind, tc.state, tc.gen); st != nil {
				obj["status"] = st
			}
			// Decoded as a watch decodes it: numbers are int64.
			b, _ := json.Marshal(obj)
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(b); err != nil {
				t.Fatal(err)
			}
			if got := crRule(u); got != tc.want {
				t.Errorf("%s %s for generation %d of %d: %q, want %q", kind, tc.state, tc.gen, tc.of, got, tc.want)
			}
		}
	}
	// Cluster API v1beta2: a Ready condition beside Available=False is not ready.
	u := &unstructured.Unstructured{Object: map[string]any{"kind": "Cluster", "status": map[string]any{"conditions": []any{
		map[string]any{"type": "Available", "status": "False"}, map[string]any{"type": "Ready", "status": "True"},
	}}}}
	if got := crRule(u); got != "" {
		t.Errorf("v1beta2 Cluster with Available=False: %q", got)
	}
}
