package health

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Fixtures in the shapes of real operators' kinds, as an informer hands
// them over: JSON numbers that are integers are int64.

type m = map[string]any

func cond(typ, status, reason, message string) m {
	c := m{"type": typ, "status": status}
	if reason != "" {
		c["reason"] = reason
	}
	if message != "" {
		c["message"] = message
	}
	return c
}

func object(apiVersion, kind string, generation int64, status m) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: m{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata":   m{"name": "web", "namespace": "shop", "generation": generation},
		"spec":       m{"replicas": int64(3)},
	}}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

// rolloutLike is an Argo Rollout: observedGeneration a string, status.phase
// Healthy/Degraded/Progressing/Paused, conditions Progressing and Healthy.
func rolloutLike(generation int64, observed, phase string, conds ...any) *unstructured.Unstructured {
	st := m{"observedGeneration": observed, "phase": phase, "replicas": int64(3)}
	if len(conds) > 0 {
		st["conditions"] = conds
	}
	if phase == "Degraded" {
		st["message"] = "RolloutAborted: Rollout aborted update to revision 3"
	}
	return object("argoproj.io/v1alpha1", "Rollout", generation, st)
}

// certificateLike is a cert-manager Certificate: a Ready condition (whose
// own observedGeneration cert-manager sets; the status has none).
func certificateLike(conds ...any) *unstructured.Unstructured {
	if len(conds) == 0 {
		return object("cert-manager.io/v1", "Certificate", 1, nil)
	}
	return object("cert-manager.io/v1", "Certificate", 1, m{"conditions": conds})
}

// withConditionGeneration is a Certificate-like object at generation gen
// with one condition that carries its own observedGeneration.
func withConditionGeneration(gen int64, c m, observed int64) *unstructured.Unstructured {
	c["observedGeneration"] = observed
	return object("cert-manager.io/v1", "Certificate", gen, m{"conditions": []any{c}})
}

// conventional follows kstatus's conventions: a numeric observedGeneration
// and the abnormal-true Reconciling and Stalled conditions.
func conventional(generation, observed int64, conds ...any) *unstructured.Unstructured {
	st := m{"observedGeneration": observed}
	if len(conds) > 0 {
		st["conditions"] = conds
	}
	return object("db.example.com/v1", "Database", generation, st)
}

// statusless is a kind with no status at all.
func statusless() *unstructured.Unstructured {
	return object("config.example.com/v1", "Setting", 1, nil)
}

func builtIn(apiVersion, kind string, spec, status m) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: m{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata":   m{"name": "web", "namespace": "shop"},
	}}
	if spec != nil {
		u.Object["spec"] = spec
	}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}
