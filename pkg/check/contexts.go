package check

// ContextSummary is one context's line in the summary of a check over
// several contexts. The JSON field names are part of the summary's stable
// shape (see output.WriteSummaryJSON): {"name":"prod-eu","verdict":"met","pods":3,
// "reason":"all 3 matching pods satisfy ready"}.
type ContextSummary struct {
	Name string `json:"name"`
	// Verdict is the context's own: met, not met, failed or done.
	Verdict string `json:"verdict"`
	Pods    int    `json:"pods"`
	Reason  string `json:"reason,omitempty"`
}
