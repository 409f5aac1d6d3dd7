package health

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

var (
	customKind     = Discovery{HasStatus: true}
	customNoStatus = Discovery{}
	builtInKind    = Discovery{BuiltIn: true, HasStatus: true}
	builtInNoSt    = Discovery{BuiltIn: true}
)

// kstatusState is the state the conventions give a kstatus status.
func kstatusState(s status.Status) check.State {
	switch s {
	case status.CurrentStatus:
		return check.Met
	case status.FailedStatus:
		return check.Failed
	}
	return check.Pending
}

type sideBySide struct {
	name      string
	obj       *unstructured.Unstructured
	discovery Discovery
	// kstatus is what status.Compute says: a status, or "error".
	kstatus string
	state   check.State
	rule    string
	msg     string // a part of the message
	// silent: kstatus is at its fallback (or errs) and podsync says why
	// instead of agreeing.
	silent bool
}

func sideBySideCases() []sideBySide {
	return []sideBySide{
		// Rollout-like: kstatus cannot read the string observedGeneration.
		{name: "Rollout-like Healthy", obj: rolloutLike(2, "2", "Healthy", cond("Progressing", "True", "NewReplicaSetAvailable", ""), cond("Healthy", "True", "", "")),
			discovery: customKind, kstatus: "error", state: check.Pending, rule: "kstatus", silent: true,
			msg: `its status.observedGeneration is a string ("2"), not a number, so kstatus cannot read its status: podsync cannot tell when it is ready; give a health rule for Rollout.argoproj.io (--health-rules)`},
		{name: "Rollout-like Degraded", obj: rolloutLike(2, "2", "Degraded", cond("Progressing", "False", "RolloutAborted", "")),
			discovery: customKind, kstatus: "error", state: check.Pending, rule: "kstatus", silent: true, msg: "give a health rule for Rollout.argoproj.io"},
		{name: "Rollout-like Progressing", obj: rolloutLike(3, "3", "Progressing", cond("Progressing", "True", "ReplicaSetUpdated", "")),
			discovery: customKind, kstatus: "error", state: check.Pending, rule: "kstatus", silent: true, msg: "give a health rule for Rollout.argoproj.io"},
		{name: "Rollout-like Healthy, generation 3 not observed", obj: rolloutLike(3, "2", "Healthy", cond("Healthy", "True", "", "")),
			discovery: customKind, kstatus: "error", state: check.Pending, rule: "kstatus", silent: true, msg: "give a health rule for Rollout.argoproj.io"},
		// Certificate-like: the Ready condition.
		{name: "Certificate-like Ready=True", obj: certificateLike(cond("Ready", "True", "Ready", "Certificate is up to date and has not expired")),
			discovery: customKind, kstatus: "Current", state: check.Met, rule: "kstatus", msg: "Resource is Ready"},
		{name: "Certificate-like Ready=False", obj: certificateLike(cond("Ready", "False", "DoesNotExist", "Issuing certificate as Secret does not exist")),
			discovery: customKind, kstatus: "InProgress", state: check.Pending, rule: "kstatus", msg: "Issuing certificate as Secret does not exist"},
		{name: "Certificate-like Issuing, no Ready yet", obj: certificateLike(cond("Issuing", "True", "DoesNotExist", "")),
			discovery: customKind, kstatus: "Current", state: check.Pending, rule: "kstatus", silent: true,
			msg: `no Ready condition; conditions: Issuing=True (DoesNotExist): kstatus's fallback "Resource is current" is no verdict, podsync cannot tell when it is ready; give a health rule for Certificate.cert-manager.io (--health-rules)`},
		{name: "Certificate-like, no status yet", obj: certificateLike(),
			discovery: customKind, kstatus: "Current", state: check.Pending, rule: "kstatus", silent: true,
			msg: "it has no status yet: podsync waits for a Ready condition (or kstatus's Reconciling and Stalled); if its controller never writes one, give a health rule for Certificate.cert-manager.io (--health-rules)"},
		// kstatus's own conventions.
		{name: "conventions: generation not observed", obj: conventional(2, 1),
			discovery: customKind, kstatus: "InProgress", state: check.Pending, rule: "kstatus", msg: "Database generation is 2, but latest observed generation is 1"},
		{name: "conventions: Reconciling=True", obj: conventional(2, 2, cond("Reconciling", "True", "Provisioning", "creating the primary")),
			discovery: customKind, kstatus: "InProgress", state: check.Pending, rule: "kstatus", msg: "creating the primary"},
		{name: "conventions: Stalled=True", obj: conventional(2, 2, cond("Stalled", "True", "QuotaExceeded", "storage quota exceeded")),
			discovery: customKind, kstatus: "Failed", state: check.Failed, rule: "kstatus", msg: "storage quota exceeded"},
		// An observed generation says the controller acted, not that
		// the object is ready: kstatus's fallback is no verdict.
		{name: "conventions: observed, no condition", obj: conventional(2, 2),
			discovery: customKind, kstatus: "Current", state: check.Pending, rule: "kstatus", silent: true,
			msg: `no conditions: kstatus's fallback "Resource is current" is no verdict`},
		{name: "Cluster API v1beta2 Cluster provisioning", obj: object("cluster.x-k8s.io/v1beta2", "Cluster", 1, m{"observedGeneration": int64(1),
			"conditions": []any{cond("Available", "False", "NotAvailable", "* ControlPlaneAvailable: Control plane not yet initialized"), cond("InfrastructureReady", "True", "Ready", "")}}),
			discovery: customKind, kstatus: "Current", state: check.Pending, rule: "kstatus", silent: true,
			msg: "no Ready condition; conditions: Available=False (NotAvailable: * ControlPlaneAvailable: Control plane not yet initialized), InfrastructureReady=True (Ready)"},
		{name: "Strimzi Kafka NotReady", obj: object("kafka.strimzi.io/v1beta2", "Kafka", 1, m{"observedGeneration": int64(1),
			"conditions": []any{cond("NotReady", "True", "InvalidResourceException", "Unsupported Kafka.spec.kafka.version: 2.0.0")}}),
			discovery: customKind, kstatus: "Current", state: check.Pending, rule: "kstatus", silent: true,
			msg: "no Ready condition; conditions: NotReady=True (InvalidResourceException: Unsupported Kafka.spec.kafka.version: 2.0.0)"},
		// A condition that carries its own observedGeneration counts only
		// for the current generation, as kubectl wait reads it.
		{name: "Certificate-like Ready=True of the previous generation", obj: withConditionGeneration(2, cond("Ready", "True", "Ready", "Certificate is up to date and has not expired"), 1),
			discovery: customKind, kstatus: "Current", state: check.Pending, rule: "kstatus", silent: true,
			msg: "Ready=True is for generation 1, not the current 2: podsync waits for its controller to report on generation 2"},
		{name: "Certificate-like Ready=True of the current generation", obj: withConditionGeneration(2, cond("Ready", "True", "Ready", "ok"), 2),
			discovery: customKind, kstatus: "Current", state: check.Met, rule: "kstatus", msg: "Resource is Ready"},
		{name: "Certificate-like Ready=False of the previous generation", obj: withConditionGeneration(2, cond("Ready", "False", "Failed", "old failure"), 1),
			discovery: customKind, kstatus: "InProgress", state: check.Pending, rule: "kstatus",
			msg: "Ready=False is for generation 1, not the current 2"},
		{name: "conventions: Stalled=True of the previous generation", obj: withConditionGeneration(2, cond("Stalled", "True", "QuotaExceeded", "old"), 1),
			discovery: customKind, kstatus: "Failed", state: check.Pending, rule: "kstatus", silent: true,
			msg: "Stalled=True is for generation 1"},
		{name: "conventions: Reconciling=False, Stalled=False", obj: conventional(2, 2, cond("Reconciling", "False", "", ""), cond("Stalled", "False", "", "")),
			discovery: customKind, kstatus: "Current", state: check.Met, rule: "kstatus"},
		{name: "conventions: being deleted", obj: func() *unstructured.Unstructured {
			u := conventional(2, 2)
			u.Object["metadata"].(m)["deletionTimestamp"] = "2026-01-01T00:00:00Z"
			return u
		}(), discovery: customKind, kstatus: "Terminating", state: check.Pending, rule: "kstatus", msg: "is being deleted"},
		// No status at all.
		{name: "no status, kind without status subresource", obj: statusless(),
			discovery: customNoStatus, kstatus: "Current", state: check.Met, rule: "exists", msg: "exists; its kind has no status"},
		{name: "no status, status in the kind's schema", obj: statusless(),
			discovery: Discovery{StatusInSchema: true}, kstatus: "Current", state: check.Pending, rule: "kstatus", silent: true, msg: "it has no status yet"},
		{name: "no status, kind with status subresource", obj: statusless(),
			discovery: customKind, kstatus: "Current", state: check.Pending, rule: "kstatus", silent: true, msg: "give a health rule for Setting.config.example.com"},
		// kstatus's own rule for a kind that client-go's scheme does not
		// hold decides, not its fallback.
		{name: "CustomResourceDefinition Established", obj: object("apiextensions.k8s.io/v1", "CustomResourceDefinition", 1,
			m{"conditions": []any{cond("NamesAccepted", "True", "NoConflicts", ""), cond("Established", "True", "InitialNamesAccepted", "")}}),
			discovery: customKind, kstatus: "Current", state: check.Met, rule: "kstatus", msg: "CRD is established"},
		// Built-in kinds follow kstatus exactly.
		{name: "ConfigMap", obj: builtIn("v1", "ConfigMap", nil, nil), discovery: builtInNoSt, kstatus: "Current", state: check.Met, rule: "kstatus"},
		{name: "Secret", obj: builtIn("v1", "Secret", nil, nil), discovery: builtInNoSt, kstatus: "Current", state: check.Met, rule: "kstatus"},
		{name: "ServiceAccount", obj: builtIn("v1", "ServiceAccount", nil, nil), discovery: builtInNoSt, kstatus: "Current", state: check.Met, rule: "kstatus"},
		{name: "ClusterRole", obj: builtIn("rbac.authorization.k8s.io/v1", "ClusterRole", nil, nil), discovery: builtInNoSt, kstatus: "Current", state: check.Met, rule: "kstatus"},
		{name: "PVC Pending", obj: builtIn("v1", "PersistentVolumeClaim", m{}, m{"phase": "Pending"}), discovery: builtInKind, kstatus: "InProgress", state: check.Pending, rule: "kstatus", msg: "PVC is not Bound. phase: Pending"},
		{name: "PVC Bound", obj: builtIn("v1", "PersistentVolumeClaim", m{}, m{"phase": "Bound"}), discovery: builtInKind, kstatus: "Current", state: check.Met, rule: "kstatus", msg: "PVC is Bound"},
		{name: "Service LoadBalancer, no clusterIP", obj: builtIn("v1", "Service", m{"type": "LoadBalancer"}, m{"loadBalancer": m{}}), discovery: builtInKind, kstatus: "InProgress", state: check.Pending, rule: "kstatus"},
		// kstatus calls a LoadBalancer Service and an Ingress current
		// before they have an address; nothing can reach them yet.
		{name: "Service LoadBalancer, clusterIP, no ingress", obj: builtIn("v1", "Service", m{"type": "LoadBalancer", "clusterIP": "10.0.0.7"}, m{"loadBalancer": m{}}), discovery: builtInKind, kstatus: "Current", state: check.Pending, rule: "kstatus", msg: "waiting for its load balancer's address", silent: true},
		{name: "Service LoadBalancer with an address", obj: builtIn("v1", "Service", m{"type": "LoadBalancer", "clusterIP": "10.0.0.7"}, m{"loadBalancer": m{"ingress": []any{m{"ip": "192.0.2.1"}}}}), discovery: builtInKind, kstatus: "Current", state: check.Met, rule: "kstatus", msg: "Service is ready"},
		{name: "Ingress, no address", obj: builtIn("networking.k8s.io/v1", "Ingress", m{}, m{"loadBalancer": m{}}), discovery: builtInKind, kstatus: "Current", state: check.Pending, rule: "kstatus", msg: "waiting for its load balancer's address", silent: true},
		{name: "Ingress with an address", obj: builtIn("networking.k8s.io/v1", "Ingress", m{}, m{"loadBalancer": m{"ingress": []any{m{"hostname": "lb.example"}}}}), discovery: builtInKind, kstatus: "Current", state: check.Met, rule: "kstatus", msg: "Resource is current"},
		{name: "CronJob", obj: builtIn("batch/v1", "CronJob", m{}, nil), discovery: builtInKind, kstatus: "Current", state: check.Met, rule: "kstatus"},
	}
}

// TestSideBySideWithKstatus compares Judge without rules with kstatus's
// Compute on the same objects: equal whenever kstatus is not at its
// silent fallback (or cannot read the status) for a custom resource. Run
// with -v for the table.
func TestSideBySideWithKstatus(t *testing.T) {
	withRule := mustParse(t, rolloutRules)
	var rows []string
	rows = append(rows, "| object | kstatus Compute | podsync Judge, no rules | same | with the Rollout rule of docs/health.md |", "|---|---|---|---|---|")
	for _, tc := range sideBySideCases() {
		t.Run(tc.name, func(t *testing.T) {
			res, err := status.Compute(tc.obj.DeepCopy())
			ks, got := "error", ""
			if err != nil {
				got = "error: " + err.Error()
			} else {
				ks = string(res.Status)
				got = ks + ": " + res.Message
			}
			if ks != tc.kstatus {
				t.Fatalf("kstatus Compute = %s (%v), the fixture expects %s", ks, err, tc.kstatus)
			}
			v := (*Rules)(nil).Judge(tc.obj, tc.discovery)
			if v.State != tc.state || v.Rule != tc.rule || !strings.Contains(v.Message, tc.msg) {
				t.Errorf("Judge = %v %q (rule %q), want %v (rule %q) with %q", v.State, v.Message, v.Rule, tc.state, tc.rule, tc.msg)
			}
			same := err == nil && kstatusState(res.Status) == v.State
			if !tc.silent && !same {
				t.Errorf("Judge says %v where kstatus says %s, and this is not the silent case", v.State, ks)
			}
			if tc.silent && same {
				t.Errorf("Judge agrees with kstatus (%s) on a case marked silent", ks)
			}
			mark := "yes"
			if !same {
				mark = "no: podsync names what is missing"
			}
			ruled := "same"
			if w := withRule.Judge(tc.obj, tc.discovery); w.Rule != v.Rule {
				ruled = fmt.Sprintf("%s: %s", w.State, w.Message)
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %s: %s (%s) | %s | %s |", tc.name, got, v.State, v.Message, v.Rule, mark, ruled))
		})
	}
	t.Log("\n" + strings.Join(rows, "\n"))
}

func TestJudgeNil(t *testing.T) {
	var rs *Rules
	v := rs.Judge(nil, customKind)
	if v.State != check.Pending || v.Message != "does not exist (yet)" || v.Rule != "exists" {
		t.Errorf("Judge(nil) = %+v", v)
	}
	rs = mustParse(t, rolloutRules)
	if v := rs.Judge(nil, customKind); v.State != check.Pending {
		t.Errorf("Judge(nil) with rules = %+v", v)
	}
}

// TestJudgeReadsOnly: the object is an informer's; neither kstatus nor a
// rule may change it.
func TestJudgeReadsOnly(t *testing.T) {
	rs := mustParse(t, rolloutRules)
	for _, tc := range sideBySideCases() {
		before := tc.obj.DeepCopy()
		rs.Judge(tc.obj, tc.discovery)
		(*Rules)(nil).Judge(tc.obj, tc.discovery)
		if !equalObjects(before, tc.obj) {
			t.Errorf("%s: Judge changed the object", tc.name)
		}
	}
	obj := rolloutLike(2, "2", "Degraded")
	before := obj.DeepCopy()
	rs.Judge(obj, customKind)
	if !equalObjects(before, obj) {
		t.Error("a rule changed the object")
	}
}

func equalObjects(a, b *unstructured.Unstructured) bool {
	return fmt.Sprint(runtime.DeepCopyJSON(a.Object)) == fmt.Sprint(runtime.DeepCopyJSON(b.Object))
}

// TestRuleReadsFreshConditions: a health rule does not see a condition of
// an older generation either.
func TestRuleReadsFreshConditions(t *testing.T) {
	rs := mustParse(t, `- apiVersion: cert-manager.io/v1
  kind: Certificate
  current: status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')
`)
	if v := rs.Judge(withConditionGeneration(2, cond("Ready", "True", "Ready", ""), 1), customKind); v.State != check.Pending {
		t.Errorf("Ready=True of generation 1 at generation 2: %+v", v)
	}
	if v := rs.Judge(withConditionGeneration(2, cond("Ready", "True", "Ready", ""), 2), customKind); v.State != check.Met {
		t.Errorf("Ready=True of generation 2: %+v", v)
	}
}
