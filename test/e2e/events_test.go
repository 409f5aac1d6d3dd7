package e2e

// The contract's events: SYNC, ADD, UPDATE, GONE with the last state,
// coalescing, and GONE then ADD for a pod re-created under its name; and
// the CHANGES column and the table's one header.

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// A pod's life as the table shows it: SYNC for the listed pod, ADD, UPDATEs
// whose CHANGES name exactly the cells that changed (or else the object
// parts), GONE; one header, every line aligned under it, CHANGES empty for
// SYNC, ADD and GONE.
func TestEventsAndChanges(t *testing.T) {
	ns := env.Namespace(t)
	runningPod(t, ns, "pod-a", nil)
	s := env.Start(t, "-n", ns, "-o", "wide")
	s.WaitLine(`^SYNC\s+pod-a\s+1/1\s+Running\s`, lineLimit)
	env.Apply(t, ns, podYAML("pod-b", nil, ""))
	s.WaitLine(`^ADD\s+pod-b\s`, lineLimit)
	s.WaitLine(`^UPDATE\s+pod-b\s+1/1\s+Running\s`, lineLimit)
	label(t, ns, "pod-a", "version=2")
	s.WaitLine(`^UPDATE\s+pod-a\s.*\smetadata\.labels$`, lineLimit)
	env.Kubectl(t, "delete", "pod", "-n", ns, "pod-b", "--wait=false")
	s.WaitLine(`^GONE\s+pod-b\s`, lineLimit)
	r := s.Stop(syscall.SIGINT)
	if r.Code != 130 {
		t.Errorf("exit after SIGINT: %d, want 130\n%s", r.Code, r)
	}
	noErrors(t, r.Stderr)
	t.Logf("stream:\n%s", r.Stdout)

	if n := count(s.Lines(), `^EVENT\s`); n != 1 || !strings.HasPrefix(s.Lines()[0], "EVENT ") {
		t.Errorf("want the header once, as the first line; found %d\n%s", n, r.Stdout)
	}
	tb := table(t, r.Stdout)
	wantHeader := []string{"EVENT", "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE", "READINESS GATES", "CHANGES"}
	if strings.Join(tb.Header, "|") != strings.Join(wantHeader, "|") {
		t.Fatalf("header %q, want %q", tb.Header, wantHeader)
	}
	checkChanges(t, tb)

	events := eventsOf(tb, "pod-b")
	if len(events) < 3 || events[0] != "ADD" || events[len(events)-1] != "GONE" {
		t.Errorf("pod-b: events %v, want ADD, UPDATE..., GONE", events)
	}
	if ev := eventsOf(tb, "pod-a"); len(ev) != 2 || ev[0] != "SYNC" || ev[1] != "UPDATE" {
		t.Errorf("pod-a: events %v, want SYNC, UPDATE", ev)
	}
}

func eventsOf(tb harness.Table, pod string) []string {
	var out []string
	for _, r := range tb.Rows {
		if r[1] == pod {
			out = append(out, r[0])
		}
	}
	return out
}

// visibleColumns are the cells CHANGES reports (AGE ages by itself).
var visibleColumns = []string{"READY", "STATUS", "RESTARTS", "IP", "NODE", "NOMINATED NODE", "READINESS GATES"}

var objectParts = regexp.MustCompile(`^(metadata|spec|status)\.\w+(,(metadata|spec|status)\.\w+)*$`)

// checkChanges recomputes every CHANGES cell from the previous row printed
// for the same pod.
func checkChanges(t *testing.T, tb harness.Table) {
	t.Helper()
	col := tb.Column
	last := map[string][]string{}
	for _, r := range tb.Rows {
		event, pod, changes := r[0], r[col("NAME")], r[col("CHANGES")]
		prev := last[pod]
		last[pod] = r
		if event != "UPDATE" {
			if changes != "" {
				t.Errorf("%s %s has CHANGES %q, want none", event, pod, changes)
			}
			continue
		}
		if prev == nil {
			t.Errorf("UPDATE %s before any SYNC or ADD", pod)
			continue
		}
		var want []string
		for _, c := range visibleColumns {
			before, after := prev[col(c)], r[col(c)]
			if c == "RESTARTS" {
				before, _, _ = strings.Cut(before, " ")
				after, _, _ = strings.Cut(after, " ")
			}
			if before != after {
				want = append(want, c+":"+before+"→"+after)
			}
		}
		switch {
		case len(want) > 0 && !sameChangeSet(changes, want):
			t.Errorf("UPDATE %s: CHANGES %q, want %q", pod, changes, strings.Join(want, " "))
		case len(want) == 0 && !objectParts.MatchString(changes):
			t.Errorf("UPDATE %s with no visible change: CHANGES %q, want object parts like metadata.labels", pod, changes)
		}
	}
}

// sameChangeSet compares CHANGES with the expected cell changes, in any
// order.
func sameChangeSet(changes string, want []string) bool {
	rest := changes
	for _, w := range want {
		if !strings.Contains(rest, w) {
			return false
		}
		rest = strings.Replace(rest, w, "", 1)
	}
	return strings.TrimSpace(rest) == ""
}

// A pod held by a finalizer shows Terminating when deleted, and its GONE
// row, once the finalizer is removed, shows that last state.
func TestGoneShowsLastState(t *testing.T) {
	ns := env.Namespace(t)
	env.Apply(t, ns, `apiVersion: v1
kind: Pod
metadata:
  name: held
  finalizers: [podsync.test/hold]
spec:
  containers:
  - name: app
    image: registry.example/app:1
`)
	t.Cleanup(func() { releaseFinalizers(ns, "held") })
	waitStatus(t, ns, "held", "1/1", "Running")
	s := env.Start(t, "-n", ns)
	s.WaitLine(`^SYNC\s+held\s+1/1\s+Running\s`, lineLimit)
	env.Kubectl(t, "delete", "pod", "-n", ns, "held", "--wait=false")
	upd := s.WaitLine(`^UPDATE\s+held\s.*Terminating`, lineLimit)
	if !strings.Contains(upd, "STATUS:Running→Terminating") {
		t.Errorf("UPDATE on deletion: %q, want CHANGES STATUS:Running→Terminating", upd)
	}
	want := fields(t, env.KubectlOut(t, "get", "pod", "-n", ns, "held", "--no-headers"))
	releaseFinalizers(ns, "held")
	gone := s.WaitLine(`^GONE\s+held\s`, lineLimit)
	got := fields(t, strings.TrimPrefix(gone, "GONE"))
	// NAME READY STATUS RESTARTS: the last state; AGE moves on.
	if strings.Join(got[:4], " ") != strings.Join(want[:4], " ") || got[2] != "Terminating" {
		t.Errorf("GONE row %q, want the last state %q (Terminating)", gone, want)
	}
	r := s.Stop(syscall.SIGINT)
	if r.Code != 130 {
		t.Errorf("exit after SIGINT: %d\n%s", r.Code, r)
	}
}

// fields splits a table line into cells (cells hold single spaces only).
func fields(t *testing.T, line string) []string {
	t.Helper()
	f := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1)
	if len(f) < 5 {
		t.Fatalf("not a pod row: %q", line)
	}
	return f
}

func releaseFinalizers(ns, pod string) {
	_, _ = env.KubectlErr("patch", "pod", "-n", ns, pod, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
}

// bigPod is a running pod whose JSON is larger than a pipe's buffer, so
// that with a held stdout the first write of it blocks the plugin.
func bigPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Labels: map[string]string{"app": name},
			Annotations: map[string]string{"podsync.test/filler": strings.Repeat("x", 70_000)},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
	}
	created, err := env.Clientset(t).CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	return created
}

// Several changes that arrive while a worker is busy with the key become
// one message with the newest state. The stream's stdout is held, so the
// plugin blocks writing the SYNC line while 30 label changes arrive.
func TestCoalescing(t *testing.T) {
	ns := env.Namespace(t)
	bigPod(t, ns, "busy")
	waitStatus(t, ns, "busy", "1/1", "Running")
	s, release := env.StartHeld(t, "-n", ns, "-o", "json")
	s.WaitWriteBlocked(lineLimit)

	const changes = 30
	pods := env.Clientset(t).CoreV1().Pods(ns)
	for i := 1; i <= changes; i++ {
		patch := fmt.Sprintf(`{"metadata":{"labels":{"step":"%d"}}}`, i)
		if _, err := pods.Patch(context.Background(), "busy", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("patch %d: %v", i, err)
		}
	}
	final := apiPod(t, ns, "busy")
	// Give the informer a moment to receive the burst; the assertion below
	// holds however many of the changes it has seen by then.
	time.Sleep(2 * time.Second)
	release()
	s.WaitLine(fmt.Sprintf(`"type":"UPDATE".*"resourceVersion":"%s"`, final.ResourceVersion), lineLimit)
	r := s.Stop(syscall.SIGINT)

	events := jsonEvents(t, s.Lines())
	updates := 0
	var last *corev1.Pod
	for i := range events {
		if events[i].Pod.Name != "busy" {
			continue
		}
		if events[i].Type == "UPDATE" {
			updates++
		}
		last = &events[i].Pod
	}
	t.Logf("%d label changes were printed as %d UPDATE messages", changes, updates)
	if updates == 0 || updates >= changes {
		t.Errorf("%d UPDATE messages for %d changes: want fewer, folded\n%s", updates, changes, r.Stderr)
	}
	if last == nil || last.ResourceVersion != final.ResourceVersion || last.Labels["step"] != fmt.Sprint(changes) {
		t.Errorf("the last message is not the final state (resourceVersion %s, step=%d)", final.ResourceVersion, changes)
	}
}

// A pod deleted and created again under the same name is GONE (the old
// pod) then ADD (the new one): both when the two happen while the key
// waits (stdout held) and when they are seen one by one.
func TestDeleteAndRecreate(t *testing.T) {
	ns := env.Namespace(t)
	first := bigPod(t, ns, "phoenix")
	waitStatus(t, ns, "phoenix", "1/1", "Running")
	s, release := env.StartHeld(t, "-n", ns, "-o", "json")
	s.WaitWriteBlocked(lineLimit)

	second := recreate(t, ns, "phoenix")
	time.Sleep(2 * time.Second)
	release()
	s.WaitLine(`"type":"ADD".*"uid":"`+string(second.UID)+`"`, lineLimit)
	third := recreate(t, ns, "phoenix")
	s.WaitLine(`"type":"ADD".*"uid":"`+string(third.UID)+`"`, lineLimit)
	s.Stop(syscall.SIGINT)

	var seq []string
	for _, ev := range jsonEvents(t, s.Lines()) {
		step := ev.Type + " " + string(ev.Pod.UID)
		if ev.Type == "UPDATE" || (len(seq) > 0 && seq[len(seq)-1] == step) {
			continue
		}
		seq = append(seq, step)
	}
	want := []string{
		"SYNC " + string(first.UID), "GONE " + string(first.UID), "ADD " + string(second.UID),
		"GONE " + string(second.UID), "ADD " + string(third.UID),
	}
	if strings.Join(seq, "\n") != strings.Join(want, "\n") {
		t.Errorf("events (UPDATEs left out):\n%s\nwant:\n%s", strings.Join(seq, "\n"), strings.Join(want, "\n"))
	}
}

// recreate deletes a pod at once (grace period 0) and creates it again
// under its name; it returns the new pod.
func recreate(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	pods := env.Clientset(t).CoreV1().Pods(ns)
	zero := int64(0)
	if err := pods.Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("delete %s: %v", name, err)
	}
	harness.Eventually(t, podLimit, harness.Text(name+" to be deleted"), func() bool {
		_, err := env.KubectlErr("get", "pod", "-n", ns, name)
		return err != nil
	})
	return bigPod(t, ns, name)
}
