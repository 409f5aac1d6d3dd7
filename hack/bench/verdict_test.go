package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestUpdateSpySeesOnlyAnUpdateRowOfItsPod(t *testing.T) {
	spy := &updateSpy{name: "web-0"}
	for _, chunk := range []string{
		"EVENT   NAMESPACE   NAME    READY\n",
		"SYNC    ns-0        web-0   1/1\n",
		"UPDATE  ns-0        web-01  1/1\nUPD",
	} {
		if _, err := spy.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if spy.seen.Load() {
		t.Fatal("seen before an UPDATE row of web-0 was written")
	}
	// A row split across two writes is read whole.
	if _, err := spy.Write([]byte("ATE  ns-0        web-0   1/1   metadata.annotations\n")); err != nil {
		t.Fatal(err)
	}
	if !spy.seen.Load() {
		t.Fatal("the UPDATE row of web-0 was not seen")
	}
}

func TestDecidingStatuses(t *testing.T) {
	st := runningStatus(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: podSpec(0, "n")}, "10.0.0.1", "10.1.0.1")
	ready := func() bool {
		return podReady(&corev1.Pod{Status: st}) && st.ContainerStatuses[0].Ready
	}
	setReady(&st, false)
	if ready() || st.Phase != corev1.PodRunning {
		t.Fatalf("not ready: %+v", st)
	}
	crashLoop(&st)
	if w := st.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "CrashLoopBackOff" || st.ContainerStatuses[0].RestartCount != 1 {
		t.Fatalf("crash loop: %+v", st.ContainerStatuses[0])
	}
	setReady(&st, true)
	if !ready() || st.ContainerStatuses[0].State.Running == nil {
		t.Fatalf("ready again: %+v", st)
	}
}
