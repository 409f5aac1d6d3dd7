package contexts

import (
	"regexp"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// podsync-2's API server is killed while a check waits on podsync-1; the
// check is then met in podsync-1 and podsync-3, and in podsync-2 on its
// last known state. A context that is disconnected is not met until it is
// back: the progress line and the summary say since when, and --timeout
// ends the check with exit 3 naming it.
func TestDisconnectedContextIsNotMet(t *testing.T) {
	ns := namespace(t)
	cs := clusters(t)
	for _, c := range cs[1:] {
		createPod(t, c.cs, ns, pod("web", nil))
	}
	for _, c := range cs[1:] {
		harness.WaitReady(t, c.cs, ns, "web")
	}
	s := env.Start(t, "--context", all, "-n", ns, "-l", "app=web", "--until", "ready", "--timeout", "45s", "--progress-interval", "2s")
	s.WaitLines(`^SYNC\s+podsync-[23]\s+web\s+1/1\s+Running\s`, 2, 2*time.Minute)

	killAPIServer(t, 1)
	s.WaitStderr(`(?m)^podsync: lost the connection to the API server of context podsync-2 `, 2*time.Minute)
	createPod(t, cs[0].cs, ns, pod("web", nil))
	harness.WaitReady(t, cs[0].cs, ns, "web")

	r := s.Wait(2 * time.Minute)
	wantExit(t, r, 3)
	since := `disconnected since \d\d:\d\d:\d\d, \S+ ago`
	for _, re := range []string{
		`(?m)^podsync: waiting \S+: .*podsync-2: ` + since,
		`(?m)^Reason:   context podsync-2: ` + since + `$`,
		`(?m)^\s+podsync-2\s+not met\s+1 pod\s+` + since + `$`,
		`(?m)^Contexts: podsync-1\s+met\s+1 pod\s`,
	} {
		if !regexp.MustCompile(re).MatchString(r.Stderr) {
			t.Errorf("stderr does not match %s\n%s", re, r)
		}
	}
}
