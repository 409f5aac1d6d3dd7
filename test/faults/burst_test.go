package faults

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

const (
	burstPods    = 40
	burstBumps   = 50 // counter changes per pod
	burstDeleted = 10 // pods deleted at the end
)

// Thousands of changes in a few seconds while podsync runs with four
// workers: for every pod the messages must keep their order (the counter
// and the resourceVersion never go back, nothing follows GONE), and the
// last message printed for each pod must be the API's final state.
func TestBurstWithFourWorkers(t *testing.T) {
	tc := sharedCluster(t)
	ns := tc.Namespace(t)
	createPod(t, tc.cs, ns, newPod("marker", true, nil))
	s := tc.Start(t, "-n", ns, "-o", "json", "--workers", "4")
	s.WaitLine(`^\{"type":"SYNC"`, 2*time.Minute)

	began := time.Now()
	if err := burst(tc.cs, ns); err != nil {
		t.Fatal(err)
	}
	for i := range burstDeleted {
		harness.DeleteNow(t, tc.cs, ns, burstName(i))
	}
	took := time.Since(began)
	changes := burstPods*(1+burstBumps) + burstDeleted
	t.Logf("burst: %d changes (%d creations, %d counter updates, %d deletions) in %s, %.0f changes/s",
		changes, burstPods, burstPods*burstBumps, burstDeleted, took.Round(time.Millisecond), float64(changes)/took.Seconds())

	final := apiState(t, tc.cs, ns)
	harness.Eventually(t, 3*time.Minute, func() string { return "podsync to print the final state of every pod; " + lastLines(s, 5) },
		func() bool { return settled(byPod(s), final) })
	t.Logf("podsync printed the final state of every pod %s after the last change; %d messages in all",
		(time.Since(began) - took).Round(time.Millisecond), len(s.Lines()))
	time.Sleep(2 * time.Second) // anything printed late would break the checks below
	msgs := byPod(s)
	for name, seq := range msgs {
		checkOrder(t, name, seq, final)
	}
	if len(msgs) != burstPods+1 {
		t.Errorf("messages for %d pods, want %d", len(msgs), burstPods+1)
	}
	r := s.Stop(syscall.SIGTERM)
	if r.Code != 143 || !strings.Contains(r.Stderr, fmt.Sprintf("ADD %d, ", burstPods)) ||
		!strings.Contains(r.Stderr, fmt.Sprintf("GONE %d", burstDeleted)) {
		t.Errorf("want exit 143 and a summary counting %d ADD and %d GONE\n%s", burstPods, burstDeleted, r.Stderr)
	}
}

func burstName(i int) string { return fmt.Sprintf("b%02d", i) }

// burst creates the pods and bumps each one's counter, all pods at once.
// Updates (protobuf both ways) cost the API server less than patches, and
// it is the bottleneck.
func burst(cs kubernetes.Interface, ns string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pods := cs.CoreV1().Pods(ns)
	var wg sync.WaitGroup
	errs := make([]error, burstPods)
	for i := range burstPods {
		wg.Go(func() {
			p, err := pods.Create(ctx, newPod(burstName(i), true, nil), metav1.CreateOptions{})
			for n := 1; n <= burstBumps && err == nil; n++ {
				p.Labels[counterKey] = strconv.Itoa(n)
				p, err = pods.Update(ctx, p, metav1.UpdateOptions{})
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// apiState maps each pod of ns to its resourceVersion; deleted pods are
// missing.
func apiState(t *testing.T, cs kubernetes.Interface, ns string) map[string]int64 {
	t.Helper()
	list, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, p := range list.Items {
		rv, err := strconv.ParseInt(p.ResourceVersion, 10, 64)
		if err != nil {
			t.Fatalf("resourceVersion %q of %s: %v", p.ResourceVersion, p.Name, err)
		}
		out[p.Name] = rv
	}
	if len(out) != burstPods+1-burstDeleted {
		t.Fatalf("the API holds %d pods, want %d", len(out), burstPods+1-burstDeleted)
	}
	return out
}

func byPod(s *harness.Stream) map[string][]message {
	out := map[string][]message{}
	for _, l := range s.Lines() {
		if m, ok := jsonMessage(l); ok {
			out[m.name] = append(out[m.name], m)
		}
	}
	return out
}

// settled reports whether the last message of each pod is the final one:
// the API's resourceVersion for a pod that exists, GONE for one deleted.
func settled(msgs map[string][]message, final map[string]int64) bool {
	for i := range burstPods {
		seq := msgs[burstName(i)]
		if len(seq) == 0 {
			return false
		}
		last := seq[len(seq)-1]
		rv, exists := final[burstName(i)]
		if exists && last.rv != rv || !exists && last.event != "GONE" {
			return false
		}
	}
	return true
}

// checkOrder checks one pod's messages: first SYNC or ADD, then updates,
// and GONE only last; the counter and the resourceVersion never go back;
// the last message shows the final counter.
func checkOrder(t *testing.T, name string, seq []message, final map[string]int64) {
	t.Helper()
	first := "ADD"
	if name == "marker" {
		first = "SYNC"
	}
	if seq[0].event != first {
		t.Errorf("pod %s: first message %s, want %s", name, seq[0], first)
	}
	for i := 1; i < len(seq); i++ {
		prev, m := seq[i-1], seq[i]
		pc, _ := strconv.Atoi(prev.count)
		mc, _ := strconv.Atoi(m.count)
		switch {
		case prev.event == "GONE":
			t.Errorf("pod %s: %s printed after GONE", name, m)
		case m.event != "UPDATE" && m.event != "GONE":
			t.Errorf("pod %s: message %d is %s", name, i, m)
		case mc < pc || m.rv <= prev.rv:
			t.Errorf("pod %s: out of order: %s (rv %d) after %s (rv %d)", name, m, m.rv, prev, prev.rv)
		}
	}
	last := seq[len(seq)-1]
	_, exists := final[name]
	wantCount := strconv.Itoa(burstBumps)
	if name == "marker" {
		wantCount = "0"
	}
	if last.count != wantCount || exists == (last.event == "GONE") {
		t.Errorf("pod %s: last message %s, want count %s and GONE only for a deleted pod", name, last, wantCount)
	}
}

func lastLines(s *harness.Stream, n int) string {
	lines := s.Lines()
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return fmt.Sprintf("%d lines so far, the last ones:\n%s\nstderr:\n%s", len(s.Lines()), strings.Join(lines, "\n"), s.Stderr())
}
