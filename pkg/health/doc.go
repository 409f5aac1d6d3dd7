// Package health judges objects of any kind that is not a built-in
// workload: custom resources, and built-in kinds such as
// PersistentVolumeClaim, Service, Ingress or ConfigMap. It is pure: it
// reads one object and what discovery says of its kind, and returns a
// check.TargetStatus whose Rule field says what decided.
//
// # Health rules
//
// A --health-rules file is a YAML list of entries in the shape of Flux's
// healthCheckExprs (Kustomization and HelmRelease .spec.healthCheckExprs),
// so that rules written for Flux work unchanged:
//
//	# rules.yaml
//	- apiVersion: argoproj.io/v1alpha1
//	  kind: Rollout
//	  inProgress: status.phase == 'Progressing' || status.phase == 'Paused'
//	  failed: status.phase == 'Degraded'
//	  current: status.phase == 'Healthy'
//
// A rule is for a group and kind: as in Flux (runtime/cel's
// PollerWithCustomHealthChecks takes schema.FromAPIVersionAndKind(...)
// .GroupKind()), the version in apiVersion does not have to be the
// object's. A rule wins over everything else for its kind, built-in kinds
// included.
//
// Evaluation follows Flux's StatusEvaluator (fluxcd/pkg runtime/cel,
// status_evaluator.go and expression.go) and RFC 0009:
//
//   - the object's top-level fields are the expression's variables:
//     apiVersion, kind, metadata, spec, status, and any other (data of a
//     ConfigMap-like kind); there is no "self";
//   - first, when status.observedGeneration is present and is not
//     metadata.generation, the object is in progress and no expression is
//     evaluated;
//   - then inProgress, failed and current (inProgress and failed are
//     optional, current is required) are evaluated in this order, and the
//     first that is true decides: in progress (pending), failed, current
//     (met); when none is true the object is in progress;
//   - an expression that cannot be evaluated, typically because it
//     refers to a field the object does not have (yet), stops the
//     evaluation, and the object is in progress: Flux's health check then
//     waits until its timeout;
//   - the CEL environment is Flux's: the standard library with optional
//     types (status.?phase.orValue("")), cross-type numeric comparisons,
//     UTC as the default time zone, and cel-go's strings, sets and
//     encoders extensions.
//
// Where podsync differs from Flux, and why:
//
//   - An expression is type-checked when the file is loaded, each free
//     identifier declared as dyn (Flux only parses it): an unknown
//     function and an expression known not to be boolean (size(...),
//     'Healthy') are errors then, exit 2, rather than a health check that
//     never ends. So is a free identifier that begins with a capital
//     letter (status.phase == Healthy): the fields of Kubernetes objects
//     begin in lower case, and such a name is a string without quotes.
//   - When an expression cannot be evaluated, or yields no boolean, the
//     verdict is Flux's (in progress) but its message names the
//     expression and CEL's error, so that the wait is never silent.
//   - Flux reads status.observedGeneration as an integer and its
//     evaluation fails when it is anything else, which makes any rule for
//     Argo Rollouts (whose observedGeneration is a string) wait forever.
//     podsync compares an observedGeneration that is a string holding a
//     decimal number, as Argo Rollouts writes it, and leaves any other
//     value to the expressions.
//   - Two entries for one group and kind are an error (Flux silently uses
//     the first), and so are an entry with an unknown field and an entry
//     for a kind podsync judges with its own rollout rule (Deployment,
//     StatefulSet, DaemonSet, ReplicaSet, Job, Pod).
//   - One evaluation is bounded by a CEL cost limit.
//
// # Built-in rules
//
// builtin.yaml holds rules for popular operators' kinds (Argo Rollouts,
// Argo CD, Flux, cert-manager, External Secrets, Sealed Secrets,
// Knative, CloudNativePG, Strimzi, KEDA, Cluster API, Crossplane), in the
// format of a rules file plus a source (the upstream project and version
// each was read from) and, for Crossplane, whose kinds are each
// provider's own, categories: such a rule judges every custom resource
// kind whose CRD lists one of them and that no rule names. WithBuiltIn
// adds them to the user's rules, a user's rule for a group and kind
// replacing the built-in one. testdata/builtin holds the status histories
// each is proven on, with Argo CD's expected health where it has one.
//
// # Without a rule
//
// kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status, Compute) decides:
// Current is met, InProgress and Terminating are pending, Failed is
// failed with the object's message. For built-in kinds that is all:
// kstatus's own rules (PersistentVolumeClaim Bound; Service of type
// LoadBalancer once spec.clusterIP is set; ConfigMap, Secret, CronJob,
// PodDisruptionBudget at once; CustomResourceDefinition Established) or,
// for kinds it has no rule for (Ingress, ServiceAccount, RBAC, ...), its
// fallback, which is met.
//
// A custom resource gets kstatus's verdict unless kstatus has nothing to
// go on. kstatus's fallback calls an object current when its status has
// no Ready condition and no Reconciling or Stalled condition, whatever
// its observedGeneration: an observed generation says the controller
// acted on the spec, not that the object is ready (a Cluster API
// v1beta2 Cluster reports Available=False, a Strimzi Kafka NotReady=True,
// both at their observed generation). So such an object is pending with
// a message that says what its status lacks and holds, and asks for a
// health rule, except an object with no status at all whose kind can
// have none (no status subresource, no status in its schema), which is
// met once it exists (as kstatus says). And when kstatus cannot read the
// status at all (an observedGeneration that is a string), the object is
// pending with a message that names the field and asks for a health rule.
//
// # Conditions of an older generation
//
// A condition that carries its own observedGeneration speaks of that
// generation of the object: once metadata.generation has moved on, it is
// not counted, by kstatus's verdict nor by a health rule's expressions,
// as kubectl wait --for=condition does not count it (a cert-manager
// Certificate keeps Ready=True of the previous spec until its controller
// looks at the new one).
package health
