package health

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/google/cel-go/common/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// Discovery is what discovery says of an object's kind.
type Discovery struct {
	// BuiltIn: served by Kubernetes itself (in client-go's scheme), not a
	// custom resource.
	BuiltIn bool
	// HasStatus: the kind serves a status subresource (discovery lists
	// "<resource>/status").
	HasStatus bool
}

// What decided a verdict, besides a health rule's label.
const (
	RuleKstatus = "kstatus"
	RuleExists  = "exists"
)

// Judge judges one object of any kind that is not a built-in workload;
// obj nil means it does not exist (yet). A nil *Rules has no rules. obj is
// only read (it is an informer's).
//
// A health rule for the object's group and kind decides alone. Without
// one, kstatus's Compute decides: Current is met, InProgress and
// Terminating wait, Failed fails with the object's message. A custom
// resource whose status gives kstatus nothing to go on (kstatus's
// fallback "Resource is current": no Ready, Reconciling or Stalled
// condition and no numeric status.observedGeneration), or a status
// kstatus cannot read, waits with a message that says what is missing
// and asks for a health rule, except an object with no status whose kind
// has no status subresource: it is met once it exists.
func (rs *Rules) Judge(obj *unstructured.Unstructured, d Discovery) check.Rollout {
	if obj == nil {
		return check.Rollout{State: check.Pending, Message: "does not exist (yet)", Rule: RuleExists}
	}
	gk := obj.GroupVersionKind().GroupKind()
	if rs != nil {
		if r, ok := rs.byKind[gk]; ok {
			return r.judge(obj)
		}
	}
	return judgeKstatus(obj, gk, d)
}

// judge is Flux's evaluation of a rule: a status.observedGeneration that
// differs from metadata.generation waits; then inProgress, failed and
// current are evaluated in this order and the first that is true decides;
// none true waits.
func (r *rule) judge(obj *unstructured.Unstructured) check.Rollout {
	out := check.Rollout{State: check.Pending, Rule: r.label()}
	if msg, stale := NotObserved(obj); stale {
		out.Message = msg
		return out
	}
	for _, e := range r.exprs {
		if e == nil {
			continue
		}
		val, _, err := e.prog.Eval(obj.Object)
		if err != nil {
			out.Message = fmt.Sprintf("its %s expression cannot be evaluated on it (%s): %s; the rule waits until it can",
				e.field, oneLine(err.Error()), short(e.src))
			return out
		}
		b, ok := val.(types.Bool)
		if !ok {
			out.Message = fmt.Sprintf("its %s expression yields %s, not a boolean: %s", e.field, val.Type(), short(e.src))
			return out
		}
		if !b {
			continue
		}
		out.Message = fmt.Sprintf("%s is true: %s", e.field, short(e.src))
		switch e.field {
		case fieldFailed:
			out.State = check.Failed
			if m := statusMessage(obj); m != "" {
				out.Message = m + " (" + out.Message + ")"
			}
		case fieldCurrent:
			out.State = check.Met
		}
		return out
	}
	if c := r.exprs[2]; c != nil {
		out.Message = "current is not true yet: " + short(c.src)
	}
	return out
}

// NotObserved is the check Flux makes before a rule's expressions: a
// status.observedGeneration that is not metadata.generation means the
// controller has not acted on the newest spec. An observedGeneration that
// is a string holding a decimal number (as Argo Rollouts writes it) is
// compared too; any other value is left to the expressions.
func NotObserved(obj *unstructured.Unstructured) (string, bool) {
	md, _ := obj.Object["metadata"].(map[string]any)
	gen, ok := md["generation"].(int64)
	if !ok {
		return "", false
	}
	st, _ := obj.Object["status"].(map[string]any)
	var observed int64
	switch v := st["observedGeneration"].(type) {
	case int64:
		observed = v
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return "", false
		}
		observed = n
	default:
		return "", false
	}
	if observed == gen {
		return "", false
	}
	return fmt.Sprintf("its controller has not observed generation %d yet (status.observedGeneration is %d)", gen, observed), true
}

// statusMessage is the object's own status.message, if it has one.
func statusMessage(obj *unstructured.Unstructured) string {
	st, _ := obj.Object["status"].(map[string]any)
	m, _ := st["message"].(string)
	return oneLine(m)
}

// short is an expression on one line, cut to a readable length.
func short(src string) string {
	s := oneLine(src)
	if r := []rune(s); len(r) > 120 {
		s = string(r[:119]) + "…"
	}
	return s
}

// judgeKstatus judges obj by kstatus's conventions.
func judgeKstatus(obj *unstructured.Unstructured, gk schema.GroupKind, d Discovery) check.Rollout {
	out := check.Rollout{State: check.Pending, Rule: RuleKstatus}
	res, err := status.Compute(obj)
	if err != nil {
		if d.BuiltIn {
			out.Message = "kstatus cannot compute its status: " + oneLine(err.Error())
			return out
		}
		out.Message = unreadable(obj, err) + ": podsync cannot tell when it is ready; " + hint(gk)
		return out
	}
	switch res.Status {
	case status.CurrentStatus:
		if why := noAddress(obj, gk, d); why != "" {
			out.Message = why
			return out
		}
		if !d.BuiltIn && silent(obj) {
			if !hasStatus(obj) && !d.HasStatus {
				return check.Rollout{State: check.Met, Message: "exists; its kind has no status", Rule: RuleExists}
			}
			out.Message = missing(obj) + ": podsync cannot tell when it is ready; " + hint(gk)
			if !hasStatus(obj) {
				out.Message = "it has no status yet: podsync waits for a Ready, Reconciling or Stalled condition or a numeric observedGeneration; if its controller never writes one, " + hint(gk)
			}
			return out
		}
		out.State, out.Message = check.Met, res.Message
	case status.FailedStatus:
		out.State, out.Message = check.Failed, res.Message
		for _, c := range res.Conditions {
			if c.Type == status.ConditionStalled {
				out.Reason = c.Reason
				if out.Message == "" {
					out.Message = c.Message
				}
			}
		}
		if out.Message == "" {
			out.Message = "its status says it failed (kstatus: Failed)"
			if out.Reason != "" {
				out.Message = "failed: " + out.Reason
			}
		}
	case status.TerminatingStatus:
		out.Message = "is being deleted"
	default: // InProgress; Compute returns neither NotFound nor Unknown
		out.Message = res.Message
		if out.Message == "" {
			out.Message = "in progress"
			for _, c := range res.Conditions {
				if c.Type == status.ConditionReconciling && c.Reason != "" {
					out.Message = "in progress: " + c.Reason
				}
			}
		}
	}
	return out
}

// conventionConditions are the condition types kstatus understands on any
// kind.
var conventionConditions = []string{"Ready", string(status.ConditionReconciling), string(status.ConditionStalled)}

// silent tells that kstatus reached its fallback for lack of anything to
// go on: no Ready, Reconciling or Stalled condition (whatever its status)
// and no numeric status.observedGeneration.
func silent(obj *unstructured.Unstructured) bool {
	st, _ := obj.Object["status"].(map[string]any)
	if _, ok := st["observedGeneration"].(int64); ok {
		return false
	}
	for _, t := range conditionTypes(st) {
		for _, c := range conventionConditions {
			if t == c {
				return false
			}
		}
	}
	return true
}

// conditionTypes are the types of status.conditions, in order.
func conditionTypes(st map[string]any) []string {
	list, _ := st["conditions"].([]any)
	var out []string
	for _, c := range list {
		m, _ := c.(map[string]any)
		if t, ok := m["type"].(string); ok && t != "" {
			out = append(out, t)
		}
	}
	return out
}

// hasStatus tells that obj has a status with something in it.
func hasStatus(obj *unstructured.Unstructured) bool {
	st, ok := obj.Object["status"].(map[string]any)
	return ok && len(st) > 0
}

// missing says what a custom resource's status lacks for kstatus.
func missing(obj *unstructured.Unstructured) string {
	st, _ := obj.Object["status"].(map[string]any)
	if types := conditionTypes(st); len(types) > 0 {
		return fmt.Sprintf("its status has conditions %s but no Ready, Reconciling or Stalled condition and no numeric observedGeneration", strings.Join(types, ", "))
	}
	return "its status has no Ready, Reconciling or Stalled condition and no numeric observedGeneration"
}

// unreadable says what kstatus cannot read in obj's status.
func unreadable(obj *unstructured.Unstructured, err error) string {
	st, _ := obj.Object["status"].(map[string]any)
	if v, ok := st["observedGeneration"]; ok {
		if _, isInt := v.(int64); !isInt {
			return fmt.Sprintf("its status.observedGeneration is %s, not a number, so kstatus cannot read its status", describe(v))
		}
	}
	return "kstatus cannot read its status (" + oneLine(err.Error()) + ")"
}

// describe names a JSON value's type, with the value when it is short.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) <= 40 {
			return fmt.Sprintf("a string (%q)", x)
		}
		return "a string"
	case float64:
		return fmt.Sprintf("a fraction (%v)", x)
	case bool:
		return fmt.Sprintf("a boolean (%v)", x)
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case nil:
		return "null"
	}
	return fmt.Sprintf("a %T", v)
}

// hint asks for a health rule for gk.
func hint(gk schema.GroupKind) string {
	return fmt.Sprintf("give a health rule for %s (--health-rules)", gk)
}

// noAddress says what a LoadBalancer Service or an Ingress waits for while
// it has no address: kstatus calls them current once they exist, but
// nothing can reach them yet.
func noAddress(obj *unstructured.Unstructured, gk schema.GroupKind, d Discovery) string {
	if !d.BuiltIn {
		return ""
	}
	switch gk {
	case schema.GroupKind{Kind: "Service"}:
		if typ, _, _ := unstructured.NestedString(obj.Object, "spec", "type"); typ != "LoadBalancer" {
			return ""
		}
	case schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}:
	default:
		return ""
	}
	ingress, _, _ := unstructured.NestedSlice(obj.Object, "status", "loadBalancer", "ingress")
	if len(ingress) > 0 {
		return ""
	}
	return "waiting for its load balancer's address (status.loadBalancer.ingress)"
}
