package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubectl-podsync/kubectl-podsync/internal/ghactions"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
)

// addDiagnosisFlags registers the flags of diagnoses, Events and progress.
func (o *Options) addDiagnosisFlags(c *cobra.Command) {
	f := c.Flags()
	f.BoolVar(&o.diagnose, "diagnose", false, "Print a DIAGNOSIS for each pod that enters a failure state: the failed containers' last log lines and the pod's Warning events (indented under its row in a table). A check explains failed pods with them either way.")
	f.BoolVar(&o.events, "events", false, "Print the Kubernetes Events of the matched pods that happen from now on, as WARNING and NORMAL messages (repeats folded by count).")
	f.IntVar(&o.logLines, "log-lines", o.logLines, fmt.Sprintf("Lines of a failed container's log in a diagnosis (its previous instance after a restart); 0: no logs (they can hold secrets and reach CI logs). At most %d.", maxLogLines))
	f.DurationVar(&o.progress, "progress-interval", o.progress, "A check that printed nothing for this long writes one line on stderr saying what it waits on (0: never).")
}

// gitHubActions is the run's GitHub Actions setting: set when
// GITHUB_ACTIONS=true (see ghactions.FromEnv).
func (o *Options) gitHubActions() (*podsync.GitHubActions, error) {
	return ghactions.FromEnv(o.getenv)
}

// stopToken is gh's ::stop-commands:: token for stdout, "" outside GitHub
// Actions.
func stopToken(gh *podsync.GitHubActions) string {
	if gh == nil {
		return ""
	}
	return gh.StdoutToken
}
