package source

import (
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// The table output prints the server's cells, and reads of the pod itself
// only its identity, labels, owners and the status the checks and their
// explanations judge. A lean row keeps just that, and a hash of each other
// part, so that CHANGES can still name a part that changed: at 150,000
// pods the full objects are most of the memory a run takes.

// Parts holds hashes of the parts of a pod that a lean row leaves out.
type Parts struct {
	Annotations, Finalizers uint32
	// Spec and Status hash each set field of the pod's spec and status,
	// by the field's index in the Go struct, in that order.
	Spec, Status []PartHash
}

// PartHash is the hash of one field of a struct, by the field's index. 32
// bits are plenty to tell two states of one field apart, and at 150,000
// pods the hashes are a good share of a lean row.
type PartHash struct {
	Field uint8
	Hash  uint32
}

// Lean replaces the row's pod with a copy holding only what the table
// output reads, and records the hashes of the rest in row.Parts, exactly
// as a lean row read from a list's bytes (decodePod) gets them. The pod it
// replaces is not changed.
func Lean(row *PodRow) {
	if redecode(row, decoder{lean: true}) == nil {
		internCells(row)
	}
}

// Pack makes a row of a whole pod packed: the outputs that print the whole
// pod (-o json, yaml, templates) keep its protobuf bytes, without
// managedFields unless kept, and a lean pod for everything else the run
// reads. The pod it replaces is not changed.
func Pack(row *PodRow, keepManagedFields bool) error {
	return redecode(row, decoder{pack: true, keepManagedFields: keepManagedFields})
}

// redecode encodes the row's pod and reads it back with d, as a pod of a
// list's bytes would be read.
func redecode(row *PodRow, d decoder) error {
	raw, err := row.Pod.Marshal()
	if err != nil {
		return fmt.Errorf("encode pod %s/%s: %w", row.Pod.Namespace, row.Pod.Name, err)
	}
	got, err := d.decodePod(raw)
	if err != nil {
		return fmt.Errorf("read pod %s/%s again: %w", row.Pod.Namespace, row.Pod.Name, err)
	}
	row.Pod, row.Parts, row.Raw = got.Pod, got.Parts, got.Raw
	return nil
}

func internCells(row *PodRow) {
	for i, c := range row.Cells {
		if str, ok := c.(string); ok {
			row.Cells[i] = intern(str)
		}
	}
}

// slim copies what is read of a pod in table mode (its containers hold
// only names and restart policies already, see containerNames): identity, labels and
// owners (the -L columns, the Deployment rollout check), the containers'
// names (explanations) and sidecar policy (STATUS), and the status the
// checks judge, without images and IDs.
func slim(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{}
	m, o := &p.ObjectMeta, &out.ObjectMeta
	o.Name, o.Namespace, o.UID, o.ResourceVersion, o.Generation = m.Name, m.Namespace, m.UID, m.ResourceVersion, m.Generation
	o.CreationTimestamp, o.DeletionTimestamp, o.DeletionGracePeriodSeconds = m.CreationTimestamp, m.DeletionTimestamp, m.DeletionGracePeriodSeconds
	o.Labels, o.OwnerReferences = internLabels(m.Labels), m.OwnerReferences
	s := &p.Status
	// A container's spec matters only until the kubelet reports it (an
	// explanation lists it as not yet reported), and an init container's
	// for its restart policy (a sidecar's STATUS).
	if len(s.ContainerStatuses) < len(p.Spec.Containers) {
		out.Spec.Containers = p.Spec.Containers
	}
	out.Spec.InitContainers = p.Spec.InitContainers
	out.Status = corev1.PodStatus{
		Phase: corev1.PodPhase(intern(string(s.Phase))), Conditions: slimConditions(s.Conditions),
		Message: s.Message, Reason: intern(s.Reason),
		InitContainerStatuses: slimStatuses(s.InitContainerStatuses),
		ContainerStatuses:     slimStatuses(s.ContainerStatuses),
	}
	return out
}

// slimConditions copies the conditions into a slice of their own length
// (a decoded one has room for as many again) sharing their words.
func slimConditions(in []corev1.PodCondition) []corev1.PodCondition {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.PodCondition, len(in))
	for i, c := range in {
		c.Type, c.Status = corev1.PodConditionType(intern(string(c.Type))), corev1.ConditionStatus(intern(string(c.Status)))
		c.Reason = intern(c.Reason)
		out[i] = c
	}
	return out
}

func slimStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, c := range in {
		out[i] = corev1.ContainerStatus{Name: intern(c.Name), State: slimState(c.State), LastTerminationState: slimState(c.LastTerminationState),
			Ready: c.Ready, RestartCount: c.RestartCount, Started: c.Started}
	}
	return out
}

func slimState(s corev1.ContainerState) corev1.ContainerState {
	if s.Waiting != nil {
		s.Waiting = &corev1.ContainerStateWaiting{Reason: intern(s.Waiting.Reason), Message: s.Waiting.Message}
	}
	if s.Terminated != nil {
		t := *s.Terminated
		t.Reason, t.ContainerID = intern(t.Reason), ""
		s.Terminated = &t
	}
	return s
}

// The same few words recur in every pod (condition types, True, reasons,
// label keys and common values): a lean row shares one copy of each.
const (
	maxInterned    = 8192
	maxInternedLen = 64
)

var interned = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

func intern(s string) string {
	if s == "" || len(s) > maxInternedLen {
		return s
	}
	interned.Lock()
	defer interned.Unlock()
	if v, ok := interned.m[s]; ok {
		return v
	}
	if len(interned.m) < maxInterned {
		interned.m[s] = s
	}
	return s
}

func internLabels(in map[string]string) map[string]string {
	if len(in) == 0 {
		return in
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[intern(k)] = intern(v)
	}
	return out
}

// sortParts orders hashes by field index.
func sortParts(p []PartHash) {
	slices.SortFunc(p, func(a, b PartHash) int { return int(a.Field) - int(b.Field) })
}
