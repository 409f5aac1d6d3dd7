package wire

import (
	"fmt"
	"reflect"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
)

// A lean pod (see PodRow) is copied out of the served pod's bytes field by
// field, never decoded and encoded again: in a table of 50,000 pods,
// building the lean rows that way was a quarter of the run's CPU, most of
// it decoding each status whole only to drop most of it.

// fieldMask is a set of protobuf field numbers below 64, which covers
// every message a lean pod copies from.
type fieldMask uint64

func (m fieldMask) has(n protowire.Number) bool { return n < 64 && m&(1<<n) != 0 }

// shape says which fields of a message a lean pod keeps: those in keep as
// they are, those in nested cut to their own shape; the rest are dropped.
type shape struct {
	keep   fieldMask
	nested map[protowire.Number]*shape
}

// maskOf is the set of the protobuf fields of T with these Go names.
func maskOf[T any](names ...string) fieldMask {
	var m fieldMask
	for _, name := range names {
		m |= 1 << numberOf[T](name)
	}
	return m
}

// numberOf is the protobuf field number of T's Go field name. The names
// are this file's own, so a missing one is a mistake in it.
func numberOf[T any](name string) protowire.Number {
	f, ok := reflect.TypeFor[T]().FieldByName(name)
	if !ok {
		panic(fmt.Sprintf("%s has no field %s", reflect.TypeFor[T](), name))
	}
	n, err := protoNum(f.Tag.Get("protobuf"))
	if err != nil || n <= 0 || n >= 64 {
		panic(fmt.Sprintf("%s.%s has no protobuf field number below 64", reflect.TypeFor[T](), name))
	}
	return n
}

// leanShapes are the shapes of slim's pod (see the lean pod's test): the
// spec's node and containers by name, restart policy and probe timings, the pod's phase,
// conditions and reasons, and each container's state without its ID or
// image.
type leanShapes struct {
	spec, specInits, status *shape
	// containers and containerStatuses are the fields counted to choose
	// between spec and specInits.
	containers, containerStatuses protowire.Number
	// probes are a container's readiness and startup probes.
	probes fieldMask
}

var leanShape = sync.OnceValue(func() leanShapes {
	// A probe by its timing alone: a check works out its budget from it.
	probe := &shape{keep: maskOf[corev1.Probe]("InitialDelaySeconds", "TimeoutSeconds", "PeriodSeconds", "SuccessThreshold", "FailureThreshold")}
	container := &shape{keep: maskOf[corev1.Container]("Name", "RestartPolicy"), nested: map[protowire.Number]*shape{
		numberOf[corev1.Container]("ReadinessProbe"): probe,
		numberOf[corev1.Container]("StartupProbe"):   probe,
	}}
	terminated := &shape{keep: ^maskOf[corev1.ContainerStateTerminated]("ContainerID")}
	state := &shape{keep: maskOf[corev1.ContainerState]("Waiting", "Running"),
		nested: map[protowire.Number]*shape{numberOf[corev1.ContainerState]("Terminated"): terminated}}
	containerStatus := &shape{keep: maskOf[corev1.ContainerStatus]("Name", "Ready", "RestartCount", "Started"),
		nested: map[protowire.Number]*shape{
			numberOf[corev1.ContainerStatus]("State"):                state,
			numberOf[corev1.ContainerStatus]("LastTerminationState"): state,
		}}
	s := leanShapes{
		containers:        numberOf[corev1.PodSpec]("Containers"),
		containerStatuses: numberOf[corev1.PodStatus]("ContainerStatuses"),
		probes:            maskOf[corev1.Container]("ReadinessProbe", "StartupProbe"),
	}
	inits := numberOf[corev1.PodSpec]("InitContainers")
	// The node a pod is bound to: a DaemonSet's pod on a deleted node is
	// not judged.
	node := maskOf[corev1.PodSpec]("NodeName")
	s.specInits = &shape{keep: node, nested: map[protowire.Number]*shape{inits: container}}
	s.spec = &shape{keep: node, nested: map[protowire.Number]*shape{inits: container, s.containers: container}}
	s.status = &shape{keep: maskOf[corev1.PodStatus]("Phase", "Conditions", "Message", "Reason", "ObservedGeneration"),
		nested: map[protowire.Number]*shape{
			s.containerStatuses: containerStatus,
			numberOf[corev1.PodStatus]("InitContainerStatuses"): containerStatus,
		}}
	return s
})

// appendLean appends to out the protobuf encoding of the lean pod of a
// pod's parts, without its metadata, which a lean row keeps decoded. A
// container's spec matters only until the kubelet reports it (an
// explanation lists it as not yet reported), and an init container's for
// its restart policy (a sidecar's STATUS).
func appendLean(out []byte, parts podParts) ([]byte, error) {
	s := leanShape()
	spec := s.specInits
	containers, err := countField(parts.spec, s.containers)
	if err != nil {
		return nil, fmt.Errorf("read a pod's spec: %w", err)
	}
	statuses, err := countField(parts.status, s.containerStatuses)
	if err != nil {
		return nil, fmt.Errorf("read a pod's status: %w", err)
	}
	if statuses < containers {
		spec = s.spec
	} else if probed, err := anyProbe(parts.spec, s); err != nil {
		return nil, fmt.Errorf("read a pod's spec: %w", err)
	} else if probed {
		spec = s.spec
	}
	if out, err = spec.appendField(out, podSpec, parts.spec); err != nil {
		return nil, fmt.Errorf("read a pod's spec: %w", err)
	}
	if out, err = s.status.appendField(out, podStatus, parts.status); err != nil {
		return nil, fmt.Errorf("read a pod's status: %w", err)
	}
	return out, nil
}

// anyProbe reports whether a container of the spec has a readiness or
// startup probe: its containers are then kept, with their probes' timing,
// from which a check works out how long it may stay unready.
func anyProbe(spec []byte, s leanShapes) (bool, error) {
	found := false
	err := eachField(spec, func(num protowire.Number, value, _ []byte) error {
		if num != s.containers || found {
			return nil
		}
		return eachField(value, func(num protowire.Number, _, _ []byte) error {
			found = found || s.probes.has(num)
			return nil
		})
	})
	return found, err
}

func countField(msg []byte, num protowire.Number) (int, error) {
	n := 0
	err := eachField(msg, func(got protowire.Number, _, _ []byte) error {
		if got == num {
			n++
		}
		return nil
	})
	return n, err
}

// appendField appends field num holding msg cut to the shape. Its length
// goes before it, so it is written in one byte and moved along when it
// needs more: most of the messages cut here are shorter than 128 bytes.
func (s *shape) appendField(out []byte, num protowire.Number, msg []byte) ([]byte, error) {
	out = protowire.AppendTag(out, num, protowire.BytesType)
	at := len(out)
	out = append(out, 0)
	err := eachField(msg, func(num protowire.Number, value, whole []byte) error {
		var err error
		switch inner := s.nested[num]; {
		case s.keep.has(num):
			out = append(out, whole...)
		case inner != nil:
			out, err = inner.appendField(out, num, value)
		}
		return err
	})
	size := len(out) - at - 1
	if n := protowire.SizeVarint(uint64(size)); n > 1 {
		out = append(out, make([]byte, n-1)...)
		copy(out[at+n:], out[at+1:at+1+size])
		protowire.AppendVarint(out[:at], uint64(size))
		return out, err
	}
	out[at] = byte(size)
	return out, err
}
