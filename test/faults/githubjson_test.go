package faults

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Under GitHub Actions, a JSON summary written when --timeout ends the
// run before it could watch (a -f URL that never answers) is still one
// line of valid JSON, its text defused as JSON: the reason quotes the
// user's argument, which here holds a workflow command.
func TestUnpreparedJSONSummaryUnderGitHub(t *testing.T) {
	tc := sharedCluster(t)
	ns := tc.Namespace(t)
	url := "http://" + silentListener(t, make(chan struct{}, 16)) + "/app.yaml###[error]x"
	r := tc.PodsyncEnv(t, time.Minute, []string{"GITHUB_ACTIONS=true"},
		"-n", ns, "-f", url, "--until", "ready", "--timeout", "3s", "-o", "json")
	if r.Code != 3 {
		t.Fatalf("exit %d, want 3\n%s", r.Code, r)
	}
	lines := strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n")
	var sum struct{ Verdict, Reason string }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("the last stderr line is not JSON: %v\n%s", err, r)
	}
	if sum.Verdict != "not met" || !strings.Contains(sum.Reason, "--timeout 3s passed while reading the manifests") {
		t.Errorf("JSON summary %+v", sum)
	}
	if strings.Contains(r.Stderr, "##[error]") {
		t.Errorf("a workflow command reaches stderr\n%s", r)
	}
}
