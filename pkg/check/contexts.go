package check

import (
	"fmt"
	"strings"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
)

// ContextSummary is one context's line in the summary of a check over
// several contexts. The JSON field names are part of the summary's stable
// shape (see WriteJSON): {"name":"prod-eu","verdict":"met","pods":3,
// "reason":"all 3 matching pods satisfy ready"}.
type ContextSummary struct {
	Name string `json:"name"`
	// Verdict is the context's own: met, not met, failed or done.
	Verdict string `json:"verdict"`
	Pods    int    `json:"pods"`
	Reason  string `json:"reason,omitempty"`
}

// writeContexts writes a line per context, its columns aligned:
//
//	Contexts: prod-eu  met     3 pods  all 3 matching pods satisfy ready
//	          prod-us  failed  1 pod   pod shop/web-1: container "app" is CrashLoopBackOff
func writeContexts(b *strings.Builder, contexts []ContextSummary) {
	pods := make([]string, len(contexts))
	names := make([]string, len(contexts))
	nameWidth, verdictWidth, podsWidth := 0, 0, 0
	for i, c := range contexts {
		pods[i] = fmt.Sprintf("%d %s", c.Pods, text.Plural(c.Pods, "pod", "pods"))
		names[i] = text.SafeLine(c.Name, 0)
		nameWidth, verdictWidth = max(nameWidth, len(names[i])), max(verdictWidth, len(c.Verdict))
		podsWidth = max(podsWidth, len(pods[i]))
	}
	for i, c := range contexts {
		head := "Contexts: "
		if i > 0 {
			head = strings.Repeat(" ", len(head))
		}
		line := fmt.Sprintf("%s%-*s  %-*s  %-*s  %s", head, nameWidth, names[i], verdictWidth, c.Verdict, podsWidth, pods[i], text.SafeLine(c.Reason, maxTextLen))
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
}
