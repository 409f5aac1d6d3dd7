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
	o.Labels, o.OwnerReferences = m.Labels, m.OwnerReferences
	out.Spec.Containers = make([]corev1.Container, len(p.Spec.Containers))
	for i := range p.Spec.Containers {
		out.Spec.Containers[i].Name = p.Spec.Containers[i].Name
	}
	if n := len(p.Spec.InitContainers); n > 0 {
		out.Spec.InitContainers = make([]corev1.Container, n)
		for i, c := range p.Spec.InitContainers {
			out.Spec.InitContainers[i] = corev1.Container{Name: c.Name, RestartPolicy: c.RestartPolicy}
		}
	}
	s := &p.Status
	out.Status = corev1.PodStatus{
		Phase: s.Phase, Conditions: s.Conditions, Message: s.Message, Reason: s.Reason,
		InitContainerStatuses: slimStatuses(s.InitContainerStatuses),
		ContainerStatuses:     slimStatuses(s.ContainerStatuses),
	}
	return out
}

func slimStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, c := range in {
		out[i] = corev1.ContainerStatus{Name: c.Name, State: c.State, LastTerminationState: c.LastTerminationState,
			Ready: c.Ready, RestartCount: c.RestartCount, Started: c.Started}
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
