package output

import (
	"bytes"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/controller"
)

// printEventJSON prints {"type":KIND,"object":POD} byte for byte as
// kubectl's JSON printer prints a WatchEvent, but marshals the pod only
// once: the printer marshals it, then scans the result again to compact
// it, which is a third of the cost of a line under churn. Both escape HTML
// characters as json.Marshal does.
func (w *Writer) printEventJSON(kind controller.Kind, pod *corev1.Pod) error {
	return w.appendEventJSON(&w.buf, kind, "", pod)
}

// appendEventJSON writes the envelope of printEventJSON to dst, with
// "context" after "type" when context is set (a run over several
// contexts).
func (w *Writer) appendEventJSON(dst *bytes.Buffer, kind controller.Kind, context string, obj any) error {
	w.scratch.Reset()
	if err := json.NewEncoder(&w.scratch).Encode(obj); err != nil {
		return fmt.Errorf("marshal the %s: %w", kind, err)
	}
	object := w.scratch.Bytes()
	object = object[:len(object)-1] // Encode ends with a newline
	dst.WriteString(`{"type":"` + kind.String() + `",`)
	if context != "" {
		name, err := json.Marshal(context)
		if err != nil {
			return fmt.Errorf("marshal the context name: %w", err)
		}
		dst.WriteString(`"context":`)
		dst.Write(name)
		dst.WriteByte(',')
	}
	dst.WriteString(`"object":`)
	dst.Write(object)
	dst.WriteString("}\n")
	return nil
}
