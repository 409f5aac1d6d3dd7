package ghactions

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// Run is what a run does for GitHub Actions: text from the cluster
// between ::stop-commands::Token and ::Token:: on stderr (and
// StdoutToken on stdout), an ::error annotation per pod a failed check
// explains, and the summary appended to StepSummary (a file; "" for none)
// as Markdown.
type Run struct {
	Token, StdoutToken string
	StepSummary        string
}

// Active reports whether the process runs as a GitHub Actions step, in
// the environment getenv reads (os.Getenv): GITHUB_ACTIONS=true.
func Active(getenv func(string) string) bool {
	return getenv("GITHUB_ACTIONS") == "true"
}

// FromEnv is the run's GitHub Actions setting from the environment
// getenv reads: nil unless GITHUB_ACTIONS=true, else random tokens for
// ::stop-commands:: and the job summary file of GITHUB_STEP_SUMMARY.
func FromEnv(getenv func(string) string) (*Run, error) {
	if !Active(getenv) {
		return nil, nil
	}
	// The runner reads stdout and stderr on threads of their own: a token
	// one stream shows must not end the pause of the other.
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("a token for GitHub Actions: %w", err)
	}
	return &Run{Token: hex.EncodeToString(b[:16]), StdoutToken: hex.EncodeToString(b[16:]),
		StepSummary: getenv("GITHUB_STEP_SUMMARY")}, nil
}
