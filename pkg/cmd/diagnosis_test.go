package cmd

import (
	"testing"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func TestDiagnosisFlagDefaults(t *testing.T) {
	o := NewOptions(genericiooptions.NewTestIOStreamsDiscard())
	o.AddFlags(&cobra.Command{})
	if o.logLines != 10 || o.progress != 30*time.Second || o.diagnose || o.events {
		t.Errorf("defaults: --log-lines %d, --progress-interval %s, --diagnose %t, --events %t", o.logLines, o.progress, o.diagnose, o.events)
	}
}

func TestGitHubActions(t *testing.T) {
	env := map[string]string{}
	o := &Options{getenv: func(k string) string { return env[k] }}
	if gh, err := o.gitHubActions(); gh != nil || err != nil {
		t.Errorf("outside GitHub Actions: %+v, %v", gh, err)
	}
	env["GITHUB_ACTIONS"], env["GITHUB_STEP_SUMMARY"] = "true", "/tmp/summary.md"
	a, err := o.gitHubActions()
	if err != nil || a == nil || a.StepSummary != "/tmp/summary.md" || len(a.Token) != 32 {
		t.Fatalf("under GitHub Actions: %+v, %v", a, err)
	}
	b, _ := o.gitHubActions()
	if a.Token == b.Token {
		t.Error("two runs got the same stop-commands token")
	}
	if len(a.StdoutToken) != 32 || a.StdoutToken == a.Token {
		t.Errorf("stdout and stderr share a token, or it is short: %q, %q", a.StdoutToken, a.Token)
	}
	if stopToken(nil) != "" || stopToken(a) != a.StdoutToken {
		t.Error("stopToken is not stdout's")
	}
}
