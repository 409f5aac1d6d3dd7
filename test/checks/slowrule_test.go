package checks

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// bigStatus is a status with n items and a round number, as a merge
// patch of the status subresource.
func bigStatus(n, round int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{"name":"item-%d","ready":"True"}`, i)
	}
	return fmt.Sprintf(`{"status":{"round":%d,"items":[%s]}}`, round, strings.Join(items, ","))
}

// patchStatusFile writes obj's status subresource from a file: a big
// status does not fit on a command line.
func patchStatusFile(t *testing.T, ns, kind, name, patch string) {
	t.Helper()
	env.Kubectl(t, "patch", "-n", ns, strings.ToLower(kind)+"."+customGroup, name, "--subresource=status", "--type=merge",
		"--patch-file", writeFile(t, "status.json", patch))
}

// slowRule is a Database with a 3,000-item status and a rule quadratic
// in it: seconds per evaluation without a deadline.
func slowRule(t *testing.T) (ns, manifest, rules string) {
	withCRDs(t)
	ns = env.Namespace(t)
	manifest = writeFile(t, "db.yaml", custom("Database", "big", "{replicas: 1}"))
	env.Kubectl(t, "apply", "-n", ns, "-f", manifest)
	patchStatusFile(t, ns, "Database", "big", bigStatus(3000, 1))
	rules = writeFile(t, "rules.yaml", `- apiVersion: `+customGroup+`/v1
  kind: Database
  current: status.items.all(a, status.items.exists(b, b.name == a.name))
`)
	return ns, manifest, rules
}

// TestSlowHealthRuleKeepsTheSignal: SIGTERM during a rule's evaluation
// ends the run at once, with its summary.
func TestSlowHealthRuleKeepsTheSignal(t *testing.T) {
	ns, manifest, rules := slowRule(t)
	s := env.Start(t, "-n", ns, "-f", manifest, "--until", "ready", "--health-rules", rules)
	time.Sleep(3 * time.Second)
	patchStatusFile(t, ns, "Database", "big", bigStatus(3000, 2))
	time.Sleep(300 * time.Millisecond)
	sent := time.Now()
	r := s.Stop(syscall.SIGTERM)
	took := time.Since(sent)
	t.Logf("ended %s after SIGTERM\n%s", took.Round(time.Millisecond), r)
	wantVerdict(t, r, 143, "interrupted")
	if took > 1500*time.Millisecond {
		t.Errorf("the run ended %s after SIGTERM, want within 1.5s", took.Round(time.Millisecond))
	}
}

// TestSlowHealthRuleKeepsTheTimeout: a health rule whose evaluation over a
// large status takes seconds is stopped (it waits and says it took too
// long), and an evaluation under way when --timeout passes is
// interrupted: the run ends at its timeout, not when the rule is done.
func TestSlowHealthRuleKeepsTheTimeout(t *testing.T) {
	ns, manifest, rules := slowRule(t)
	s := env.Start(t, "-n", ns, "-f", manifest, "--until", "ready", "--timeout", "5s", "--health-rules", rules)
	// A change shortly before the timeout: its evaluation is under way
	// when the timeout passes.
	time.Sleep(4200 * time.Millisecond)
	patchStatusFile(t, ns, "Database", "big", bigStatus(3000, 2))
	r := s.Wait(time.Minute)
	t.Logf("%s", r)
	wantVerdict(t, r, 3, "not met")
	if after := verdictAfter(t, r.Stderr); after > 6500*time.Millisecond {
		t.Errorf("the run ended %s after it started, want within 1.5s of its --timeout 5s", after)
	}
	if !strings.Contains(r.Stderr, "took too long") && !strings.Contains(r.Stderr, "stopped unfinished when the run ended") {
		t.Errorf("stderr does not say that the rule took too long\n%s", r.Stderr)
	}
}

// TestCompilingHealthRulesIsNamed: compiling many health rules takes a
// while; a --timeout that passes meanwhile ends the run on time and says
// so.
func TestCompilingHealthRulesIsNamed(t *testing.T) {
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, `- apiVersion: example.com/v1
  kind: Kind%d
  inProgress: "status.conditions.filter(e, e.type == 'Reconciling').all(e, e.status == 'True')"
  failed: "status.conditions.filter(e, e.type == 'Stalled').all(e, e.status == 'True')"
  current: "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True' && metadata.generation == status.observedGeneration)"
`, i)
	}
	rules := writeFile(t, "rules.yaml", b.String())
	ns := env.Namespace(t)
	r := env.Podsync(t, time.Minute, "-n", ns, "deployment/web", "--until", "ready", "--timeout", "2s", "--health-rules", rules)
	t.Logf("%s", r)
	wantVerdict(t, r, 3, "not met")
	wantStderr(t, r, "Verdict:  not met (exit 3) after 2s\nReason:   --timeout 2s passed while compiling the health rules (--health-rules "+rules+")")
}
