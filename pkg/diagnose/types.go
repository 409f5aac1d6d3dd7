package diagnose

import "github.com/kubectl-podsync/kubectl-podsync/pkg/diagnosis"

// What a diagnosis finds is package diagnosis's; these names keep it at
// hand here and for the callers of this package.

// Kind is the kind of a Diagnosis object (see diagnosis.Kind).
const Kind = diagnosis.Kind

type (
	// Diagnosis is what was found out about one pod in a failure state.
	Diagnosis = diagnosis.Diagnosis
	// Meta names the pod.
	Meta = diagnosis.Meta
	// Container is one failed container and its log tail.
	Container = diagnosis.Container
	// Failure is the failure state a pod shows now.
	Failure = diagnosis.Failure
	// FailedContainer is one container in a failure state.
	FailedContainer = diagnosis.FailedContainer
)
