package check

// Exit codes of kubectl podsync, as promised by the contract. Scripts
// branch on these numbers, so they must never change.
const (
	// ExitOK: the stream ended as asked, or --until was met.
	ExitOK = 0
	// ExitCluster: the cluster could not be used (unreachable,
	// unauthorized, forbidden) or an internal error happened.
	ExitCluster = 1
	// ExitUsage: a bad flag, selector, duration, condition or template,
	// reported before any cluster call.
	ExitUsage = 2
	// ExitNotMet: --until was not met within --timeout or on the --once state.
	ExitNotMet = 3
	// ExitFailed: a matching pod showed a --fail-on reason or exceeded
	// --max-restarts.
	ExitFailed = 4
	// ExitSIGINT: interrupted by SIGINT (128+2), after the summary.
	ExitSIGINT = 130
	// ExitSIGTERM: interrupted by SIGTERM (128+15), after the summary.
	ExitSIGTERM = 143
)
