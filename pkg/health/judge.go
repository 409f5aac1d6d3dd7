package health

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/cel-go/common/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
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
	// StatusInSchema: the kind's schema declares a status field, so its
	// controller writes one, with or without a status subresource.
	StatusInSchema bool
	// Categories are the categories the kind's CRD lists (crossplane,
	// managed, claim, ...); a built-in rule can be for a category.
	Categories []string
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
// Terminating wait, Failed fails with the object's message. Either reads
// only the conditions of the object's current generation (see Fresh).
// A custom resource that kstatus calls current for lack of anything to go
// on (its fallback "Resource is current": no Ready condition, no
// Reconciling or Stalled condition; a status.observedGeneration equal to
// the generation only says the controller saw the spec), or whose status
// kstatus cannot read, waits with a message that says what is missing
// and asks for a health rule, except an object with no status whose kind
// can have none (no status subresource, no status in its schema): it is
// met once it exists.
func (rs *Rules) Judge(obj *unstructured.Unstructured, d Discovery) check.TargetStatus {
	return rs.JudgeContext(context.Background(), obj, d)
}

// JudgeContext is Judge with the run's context: a rule's evaluation stops
// when ctx ends, and after evalTimeout; a rule stopped waits, and says it
// took too long.
func (rs *Rules) JudgeContext(ctx context.Context, obj *unstructured.Unstructured, d Discovery) check.TargetStatus {
	if obj == nil {
		return check.TargetStatus{State: check.Pending, Message: "does not exist (yet)", Rule: RuleExists}
	}
	gk := obj.GroupVersionKind().GroupKind()
	if r := rs.ruleFor(gk, d); r != nil {
		return r.judge(ctx, obj)
	}
	return judgeKstatus(obj, gk, d)
}

// judge is Flux's evaluation of a rule: a status.observedGeneration that
// differs from metadata.generation waits; then inProgress, failed and
// current are evaluated in this order and the first that is true decides;
// none true waits.
func (r *rule) judge(ctx context.Context, obj *unstructured.Unstructured) (out check.TargetStatus) {
	out = check.TargetStatus{State: check.Pending, Rule: r.label()}
	if msg, stale := NotObserved(obj); stale {
		out.Message = msg
		return out
	}
	if r.source != "" && !hasStatus(obj) {
		// The built-in rules read the status; Flux's evaluation would
		// fail on the absent variable.
		out.Message = "it has no status yet: its controller has not reported on it"
		return out
	}
	// A condition of an older generation is not seen by the expressions;
	// a wait says which were left out.
	fresh, stale := Fresh(obj)
	if len(stale) > 0 {
		defer func() {
			if out.State == check.Pending {
				out.Message += "; " + staleNote(obj, stale)
			}
		}()
	}
	evalCtx, cancel := evalContext(ctx)
	defer cancel()
	start := time.Now()
	for _, e := range r.exprs {
		if e == nil {
			continue
		}
		val, _, err := e.prog.ContextEval(evalCtx, fresh.Object)
		if err != nil {
			if why := stopped(ctx, evalCtx, err, time.Since(start)); why != "" {
				out.Message = fmt.Sprintf("its %s expression %s: %s", e.field, why, short(e.src))
				return out
			}
			out.Message = fmt.Sprintf("its %s expression cannot be evaluated on it (%s): %s; the rule waits until it can",
				e.field, text.OneLine(err.Error(), 0), short(e.src))
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
			} else if m := abnormal(fresh); m != "" {
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
	return text.OneLine(m, 0)
}

// abnormal lists the conditions of obj that say something is wrong (a
// False condition, or a True one whose type is itself bad news, such as
// Strimzi's NotReady), with their reasons and messages: what a failed
// verdict quotes when the status has no message of its own.
func abnormal(obj *unstructured.Unstructured) string {
	st, _ := obj.Object["status"].(map[string]any)
	var parts []string
	for _, c := range conditionsOf(st) {
		bad := c.typ == "Stalled" || c.typ == "NotReady" || c.typ == "Failed" || c.typ == "Degraded"
		if (c.status == "False" && !bad || c.status == "True" && bad) && (c.reason != "" || c.message != "") {
			parts = append(parts, c.String())
		}
	}
	return strings.Join(parts, ", ")
}

// short is an expression on one line, cut to a readable length.
func short(src string) string { return text.OneLine(src, 120) }

// judgeKstatus judges obj by kstatus's conventions, over the conditions
// that speak of its current generation (see Fresh).
func judgeKstatus(obj *unstructured.Unstructured, gk schema.GroupKind, d Discovery) check.TargetStatus {
	out := check.TargetStatus{State: check.Pending, Rule: RuleKstatus}
	fresh, stale := Fresh(obj)
	res, err := status.Compute(fresh)
	if err != nil {
		if d.BuiltIn {
			out.Message = "kstatus cannot compute its status: " + text.OneLine(err.Error(), 0)
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
		if !d.BuiltIn && status.GetLegacyConditionsFn(fresh) == nil && fallback(fresh) {
			if !hasStatus(obj) && !d.HasStatus && !d.StatusInSchema {
				return check.TargetStatus{State: check.Met, Message: "exists; its kind has no status", Rule: RuleExists}
			}
			out.Message = missing(fresh, stale, gk)
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
		if len(stale) > 0 {
			out.Message += "; " + staleNote(obj, stale)
		}
	}
	return out
}

// fallback tells that kstatus called a custom resource current for lack
// of anything to go on ("Resource is current"): for a kind without
// kstatus's own rules, Compute is Current either on a Ready=True
// condition or on that fallback. A Reconciling or Stalled condition that
// is present (False: Current would not come otherwise) is kstatus's own
// convention for "reconciled", and counts.
func fallback(obj *unstructured.Unstructured) bool {
	st, _ := obj.Object["status"].(map[string]any)
	for _, c := range conditionsOf(st) {
		switch c.typ {
		case "Ready":
			if c.status == "True" {
				return false
			}
		case string(status.ConditionReconciling), string(status.ConditionStalled):
			return false
		}
	}
	return true
}

// condition is what a verdict says of one entry of status.conditions.
type condition struct {
	typ, status, reason, message string
	// observed is the condition's own observedGeneration; has says it
	// carries one (a number).
	observed int64
	has      bool
}

// conditionsOf reads status.conditions; entries without a type are left
// out.
func conditionsOf(st map[string]any) []condition {
	list, _ := st["conditions"].([]any)
	var out []condition
	for _, e := range list {
		m, _ := e.(map[string]any)
		c := condition{}
		c.typ, _ = m["type"].(string)
		if c.typ == "" {
			continue
		}
		c.status, _ = m["status"].(string)
		c.reason, _ = m["reason"].(string)
		c.message, _ = m["message"].(string)
		c.observed, c.has = m["observedGeneration"].(int64)
		out = append(out, c)
	}
	return out
}

// String is "Type=Status (Reason: message)", the message cut short.
func (c condition) String() string {
	s := c.typ + "=" + c.status
	detail := strings.TrimPrefix(c.reason+": "+short(c.message), ": ")
	detail = strings.TrimSuffix(detail, ": ")
	if detail != "" {
		s += " (" + detail + ")"
	}
	return s
}

// Fresh is obj without the conditions that speak of an older generation:
// a condition that carries its own observedGeneration counts only when it
// is metadata.generation, as kubectl wait --for=condition reads it (a
// cert-manager Certificate keeps the previous spec's Ready=True until
// its controller has looked at the new one). stale are the conditions
// left out. obj itself is returned, never changed, when none is stale;
// else a copy.
func Fresh(obj *unstructured.Unstructured) (*unstructured.Unstructured, []condition) {
	gen := obj.GetGeneration()
	st, _ := obj.Object["status"].(map[string]any)
	if gen == 0 || st == nil {
		return obj, nil
	}
	var stale []condition
	for _, c := range conditionsOf(st) {
		if c.has && c.observed != gen {
			stale = append(stale, c)
		}
	}
	if len(stale) == 0 {
		return obj, nil
	}
	cp := obj.DeepCopy()
	cst := cp.Object["status"].(map[string]any)
	list, _ := cst["conditions"].([]any)
	kept := make([]any, 0, len(list))
	for _, e := range list {
		m, _ := e.(map[string]any)
		if g, has := m["observedGeneration"].(int64); has && g != gen {
			continue
		}
		kept = append(kept, e)
	}
	cst["conditions"] = kept
	return cp, stale
}

// staleNote says which conditions were left out as older than obj's
// generation.
func staleNote(obj *unstructured.Unstructured, stale []condition) string {
	parts := make([]string, 0, len(stale))
	for _, c := range stale {
		parts = append(parts, fmt.Sprintf("%s=%s is for generation %d", c.typ, c.status, c.observed))
	}
	return fmt.Sprintf("%s, not the current %d", strings.Join(parts, ", "), obj.GetGeneration())
}

// hasStatus tells that obj has a status with something in it.
func hasStatus(obj *unstructured.Unstructured) bool {
	st, ok := obj.Object["status"].(map[string]any)
	return ok && len(st) > 0
}

// missing says why a custom resource at kstatus's fallback waits: what
// its status lacks, what it holds, and what would decide.
func missing(fresh *unstructured.Unstructured, stale []condition, gk schema.GroupKind) string {
	if !hasStatus(fresh) {
		return "it has no status yet: podsync waits for a Ready condition (or kstatus's Reconciling and Stalled); if its controller never writes one, " + hint(gk)
	}
	st, _ := fresh.Object["status"].(map[string]any)
	conds := conditionsOf(st)
	if slices.ContainsFunc(stale, func(c condition) bool { return c.typ == "Ready" }) {
		// Its controller does report Ready: it has not reported on this
		// generation yet.
		return fmt.Sprintf("%s: podsync waits for its controller to report on generation %d", staleNote(fresh, stale), fresh.GetGeneration())
	}
	parts := []string{"no Ready condition"}
	if len(conds) == 0 && len(stale) == 0 {
		parts[0] = "no conditions"
	}
	if len(stale) > 0 {
		parts = append(parts, staleNote(fresh, stale))
	}
	if len(conds) > 0 {
		list := make([]string, 0, len(conds))
		for _, c := range conds {
			list = append(list, c.String())
		}
		parts = append(parts, "conditions: "+strings.Join(list, ", "))
	}
	return strings.Join(parts, "; ") + `: kstatus's fallback "Resource is current" is no verdict, podsync cannot tell when it is ready; ` + hint(gk)
}

// unreadable says what kstatus cannot read in obj's status.
func unreadable(obj *unstructured.Unstructured, err error) string {
	st, _ := obj.Object["status"].(map[string]any)
	if v, ok := st["observedGeneration"]; ok {
		if _, isInt := v.(int64); !isInt {
			return fmt.Sprintf("its status.observedGeneration is %s, not a number, so kstatus cannot read its status", describe(v))
		}
	}
	return "kstatus cannot read its status (" + text.OneLine(err.Error(), 0) + ")"
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
