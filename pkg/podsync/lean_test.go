package podsync_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/output"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// The lean rows of the table output print exactly what the
// whole pods printed: the model's generator makes histories of pod
// changes, each change is also given random edits of the parts a lean row
// keeps only as hashes (annotations, finalizers, spec, status fields), and
// every message of every history is rendered twice, from whole rows and
// from lean rows, in each table layout; the two outputs must be equal
// byte for byte.
func TestLeanRowsPrintTheSame(t *testing.T) {
	layouts := [][]string{nil, {"-o", "wide"}, {"-L", "inc,rv"}, {"--show-labels"}}
	for seed := uint64(1); seed <= 300; seed++ {
		h := generate(seed)
		msgs := leanHistory(h, rand.New(rand.NewPCG(seed, 7)))
		for _, args := range layouts {
			full, lean := render(t, args, msgs, nil), render(t, args, msgs, wire.Lean)
			if full != lean {
				t.Fatalf("seed %d %v: lean rows print differently\n--- whole\n%s--- lean\n%s", seed, args, full, lean)
			}
		}
	}
}

// The packed rows of the other outputs (-o json, yaml, name, templates)
// print exactly what the whole pods printed, in the same way: the pod
// is decoded from the packed bytes for the printer, and its lean part is
// what the rest of the run reads. Some states carry managedFields, which
// a packed row keeps when asked to (--show-managed-fields).
func TestPackedRowsPrintTheSame(t *testing.T) {
	layouts := [][]string{{"-o", "json"}, {"-o", "yaml"}, {"-o", "name"},
		{"-o", "jsonpath={.metadata.name} {.spec.containers[0].image} {.status.podIP}{\"\\n\"}"},
		{"-o", "go-template={{.metadata.name}} {{.metadata.annotations}} {{.spec.tolerations}}{{\"\\n\"}}"},
		{"-o", "custom-columns=NAME:.metadata.name,IMAGE:.spec.containers[0].image,FIN:.metadata.finalizers,MF:.metadata.managedFields[0].manager"}}
	pack := func(row *wire.PodRow) {
		if err := wire.Pack(row, true); err != nil {
			t.Fatal(err)
		}
	}
	for seed := uint64(1); seed <= 100; seed++ {
		h := generate(seed)
		msgs := leanHistory(h, rand.New(rand.NewPCG(seed, 7)))
		for _, args := range layouts {
			full, packed := render(t, args, msgs, nil), render(t, args, msgs, pack)
			if full != packed {
				t.Fatalf("seed %d %v: packed rows print differently\n--- whole\n%s--- packed\n%s", seed, args, full, packed)
			}
		}
		samePods(t, seed, msgs, pack)
	}
}

// samePods: the lean pod of a packed row, which the checks, the summary
// and the explanations read, is the lean pod of the table's lean row.
func samePods(t *testing.T, seed uint64, msgs []message.Message, pack func(*wire.PodRow)) {
	t.Helper()
	for i, m := range msgs {
		if m.Row == nil {
			continue
		}
		lean, packed := *m.Row, *m.Row
		wire.Lean(&lean)
		pack(&packed)
		if a, b := lean.Pod(), packed.Pod(); !equality.Semantic.DeepEqual(a, b) {
			t.Fatalf("seed %d message %d: the packed row's lean pod differs from the lean row's:\n%s", seed, i, diff.Diff(a, b))
		}
	}
}

// leanHistory turns a history's steps into the messages a run would print
// for them, without the informer: ADD, UPDATE, GONE, and GONE then ADD for
// a recreation.
func leanHistory(h *history, r *rand.Rand) []message.Message {
	sim := newSim(true)
	pods := map[string]*corev1.Pod{}
	inc := map[string]int{}
	var msgs []message.Message
	emit := func(typ message.Type, key string, p *corev1.Pod) {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		msgs = append(msgs, message.Message{Type: typ, Key: cache.ObjectName{Namespace: ns, Name: name}, Row: sim.row(p)})
	}
	put := func(key string, st podState, typ message.Type) {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		if pods[key] == nil {
			inc[key]++
		}
		p := newSimPod(ns, name, inc[key], st, "")
		if old := pods[key]; old != nil && typ == message.Update {
			p = old.DeepCopy()
			setState(p, st)
		}
		edit(p, r)
		p.ResourceVersion = fmt.Sprint(len(msgs) + 1)
		p.Labels["rv"] = p.ResourceVersion
		pods[key] = p
		emit(typ, key, p)
	}
	for k, st := range h.initial {
		put(h.key(k), st, message.Sync)
	}
	for _, o := range h.ops {
		key := h.key(o.key)
		switch {
		case o.step == opCreate && pods[key] == nil:
			put(key, o.state, message.Add)
		case o.step == opUpdate && pods[key] != nil:
			put(key, o.state, message.Update)
		case (o.step == opDelete || o.step == opRecreate) && pods[key] != nil:
			emit(message.Gone, key, pods[key])
			delete(pods, key)
			if o.step == opRecreate {
				put(key, o.state, message.Add)
			}
		}
	}
	return msgs
}

// edit changes, at random, parts that lean rows keep only as hashes.
func edit(p *corev1.Pod, r *rand.Rand) {
	switch r.IntN(9) {
	case 0:
		p.Annotations["note"] = fmt.Sprint(r.IntN(3))
	case 1:
		p.Finalizers = append(p.Finalizers, fmt.Sprintf("example.com/f%d", r.IntN(2)))
	case 2:
		p.Spec.Containers[0].Image = fmt.Sprintf("sim:%d", r.IntN(3))
	case 3:
		d := int64(r.IntN(3))
		p.Spec.ActiveDeadlineSeconds = &d
	case 4:
		p.Spec.Tolerations = []corev1.Toleration{{Key: fmt.Sprint(r.IntN(2)), Operator: corev1.TolerationOpExists}}
	case 5:
		p.Status.PodIP = fmt.Sprintf("10.0.0.%d", r.IntN(3))
	case 6:
		p.Status.ContainerStatuses[0].ImageID = fmt.Sprintf("sha256:%d", r.IntN(3))
	case 7:
		p.Status.StartTime = &metav1.Time{Time: time.Date(2026, 12, 3, 10, r.IntN(3), 0, 0, time.UTC)}
	case 8:
		p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: fmt.Sprintf("m%d", r.IntN(2)), Operation: metav1.ManagedFieldsOperationUpdate}}
	}
}

// render prints msgs through a Writer, from whole rows or from rows that
// slim (wire.Lean, or a packer) made of copies of them.
func render(t *testing.T, args []string, msgs []message.Message, slim func(*wire.PodRow)) string {
	t.Helper()
	pf := get.NewGetPrintFlags()
	c := &cobra.Command{}
	pf.AddFlags(c)
	if err := c.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	now := time.Date(2026, 12, 3, 11, 0, 0, 0, time.UTC)
	w, err := output.New(output.Options{PrintFlags: pf, Out: &out, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if slim != nil && m.Row != nil {
			row := *m.Row
			slim(&row)
			m.Row = &row
		}
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
