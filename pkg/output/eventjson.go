package output

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
)

// printJSON prints {"type":KIND,"object":POD} byte for byte as kubectl's
// JSON printer prints a WatchEvent, but marshals the pod only once: the
// printer marshals it, then scans the result again to compact it, which
// is a third of the cost of a line under churn. Both escape HTML
// characters as json.Marshal does. A packed row's pod is written from its
// bytes, without decoding it (see source.PodJSON).
func (w *Writer) printJSON(msg message.Message) error {
	var ok bool
	if w.jsonBuf, ok = w.podJSON.Append(w.jsonBuf[:0], msg.Row); ok {
		return w.appendEvent(&w.buf, msg.Type, w.messageContext(msg), w.jsonBuf)
	}
	whole, err := msg.Row.Whole()
	if err != nil {
		return err
	}
	return w.appendEventJSON(&w.buf, msg.Type, w.messageContext(msg), typedPod(whole))
}

// appendEventJSON writes the envelope of printJSON around obj to dst, with
// "context" after "type" when context is set (a run over several
// contexts).
func (w *Writer) appendEventJSON(dst *bytes.Buffer, typ message.Type, context string, obj any) error {
	w.scratch.Reset()
	if err := json.NewEncoder(&w.scratch).Encode(obj); err != nil {
		return fmt.Errorf("marshal the %s: %w", typ, err)
	}
	object := w.scratch.Bytes()
	return w.appendEvent(dst, typ, context, object[:len(object)-1]) // Encode ends with a newline
}

// appendEvent writes the envelope of printJSON around object, a pod's
// JSON.
func (w *Writer) appendEvent(dst *bytes.Buffer, typ message.Type, context string, object []byte) error {
	dst.WriteString(`{"type":"` + typ.String() + `",`)
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
