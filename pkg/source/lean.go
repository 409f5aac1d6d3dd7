package source

import (
	"hash/fnv"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
)

// The table output prints the server's cells, and reads of the pod itself
// only its identity, labels, owners and the status the checks and their
// explanations judge. A lean row keeps just that, and a hash of each other
// part, so that CHANGES can still name a part that changed: at 150,000
// pods the full objects are most of the memory a run takes.

// Parts holds hashes of the parts of a pod that a lean row leaves out.
type Parts struct {
	Annotations, Finalizers uint64
	// Spec and Status hash each set field of the pod's spec and status,
	// by the field's index in the Go struct, in that order.
	Spec, Status []PartHash
}

// PartHash is the hash of one field of a struct.
type PartHash struct {
	Field int
	Hash  uint64
}

// Lean replaces the row's pod with a copy holding only what the table
// output reads, and records the hashes of the rest in row.Parts. The pod
// it replaces is not changed.
func Lean(row *PodRow) {
	p := row.Pod
	row.Parts = &Parts{
		Annotations: hashMap(p.Annotations),
		Finalizers:  hashStrings(p.Finalizers),
		Spec:        fieldHashes(&p.Spec, specFields()),
		Status:      fieldHashes(&p.Status, statusFields()),
	}
	row.Pod = slim(p)
	for i, c := range row.Cells {
		if str, ok := c.(string); ok {
			row.Cells[i] = intern(str)
		}
	}
}

// slim copies what is read of a pod in table mode: identity, labels and
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
		out.Spec.Containers = names(p.Spec.Containers)
	}
	if len(p.Spec.InitContainers) > 0 {
		out.Spec.InitContainers = names(p.Spec.InitContainers)
	}
	out.Status = corev1.PodStatus{
		Phase: corev1.PodPhase(intern(string(s.Phase))), Conditions: slimConditions(s.Conditions),
		Message: s.Message, Reason: intern(s.Reason),
		InitContainerStatuses: slimStatuses(s.InitContainerStatuses),
		ContainerStatuses:     slimStatuses(s.ContainerStatuses),
	}
	return out
}

// names keeps the containers' names and restart policies.
func names(in []corev1.Container) []corev1.Container {
	out := make([]corev1.Container, len(in))
	for i, c := range in {
		out[i] = corev1.Container{Name: c.Name, RestartPolicy: c.RestartPolicy}
	}
	return out
}

func slimConditions(in []corev1.PodCondition) []corev1.PodCondition {
	out := make([]corev1.PodCondition, len(in))
	for i, c := range in {
		out[i] = corev1.PodCondition{Type: corev1.PodConditionType(intern(string(c.Type))),
			Status: corev1.ConditionStatus(intern(string(c.Status))), Reason: intern(c.Reason), Message: c.Message,
			LastTransitionTime: c.LastTransitionTime}
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

// protoMessage is what generated API types offer.
type protoMessage interface {
	Marshal() ([]byte, error)
}

// fieldHashes hashes each set field of msg from its protobuf encoding, by
// the Go struct index that fields maps the field number to.
func fieldHashes(msg protoMessage, fields map[protowire.Number]int) []PartHash {
	raw, err := msg.Marshal()
	if err != nil {
		return nil // generated marshalling of a decoded object does not fail
	}
	byField := map[int]uint64{}
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 {
			break
		}
		m := protowire.ConsumeFieldValue(num, typ, raw[n:])
		if m < 0 {
			break
		}
		// Repeated fields come as several entries: fold them in order.
		h := fnv.New64a()
		_, _ = h.Write(raw[:n+m])
		i := fields[num]
		byField[i] = byField[i]*1099511628211 ^ h.Sum64()
		raw = raw[n+m:]
	}
	out := make([]PartHash, 0, len(byField))
	for i, h := range byField {
		out = append(out, PartHash{Field: i, Hash: h})
	}
	slices.SortFunc(out, func(a, b PartHash) int { return a.Field - b.Field })
	return out
}

// structFields maps the protobuf field numbers of a generated struct to
// the index of each field in the Go struct.
func structFields(t reflect.Type) map[protowire.Number]int {
	out := map[protowire.Number]int{}
	for i := range t.NumField() {
		tag := t.Field(i).Tag.Get("protobuf")
		parts := strings.Split(tag, ",")
		if len(parts) < 2 {
			continue
		}
		if n, err := strconv.Atoi(parts[1]); err == nil {
			out[protowire.Number(n)] = i
		}
	}
	return out
}

var (
	specFields   = sync.OnceValue(func() map[protowire.Number]int { return structFields(reflect.TypeFor[corev1.PodSpec]()) })
	statusFields = sync.OnceValue(func() map[protowire.Number]int { return structFields(reflect.TypeFor[corev1.PodStatus]()) })
)

func hashMap(m map[string]string) uint64 {
	if len(m) == 0 {
		return 0
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := fnv.New64a()
	for _, k := range keys {
		_, _ = h.Write([]byte(k + "\x00" + m[k] + "\x00"))
	}
	return h.Sum64()
}

func hashStrings(s []string) uint64 {
	if len(s) == 0 {
		return 0
	}
	h := fnv.New64a()
	for _, v := range s {
		_, _ = h.Write([]byte(v + "\x00"))
	}
	return h.Sum64()
}
