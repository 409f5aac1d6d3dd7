package output

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// leftBehindWay says how the pod ended, in a word or two: "evicted",
// "shut down" (a graceful node shutdown), or "failed".
func leftBehindWay(p check.LeftBehindPod) string {
	switch p.Reason {
	case "Evicted":
		return "evicted"
	case "Terminated", "Shutdown", "NodeShutdown":
		return "shut down"
	}
	return "failed"
}

// LeftBehindNote is the line that names a pod left behind once on
// stderr, without the "podsync: " prefix: "pod shop/web-7d4f-x2 was
// evicted and replaced by its ReplicaSet web-7d4f; not judged".
func LeftBehindNote(p check.LeftBehindPod) string {
	how := "was " + leftBehindWay(p)
	if leftBehindWay(p) == "failed" {
		how = "failed"
		if p.Reason != "" {
			how += " (" + p.Reason + ")"
		}
	}
	return text.SafeLine(fmt.Sprintf("pod %s/%s %s and replaced by its %s %s; not judged",
		p.Namespace, p.Name, how, p.OwnerKind, p.OwnerName), maxTextLen)
}

// maxLeftBehindNames bounds the names the text and Markdown summaries
// list; the JSON summary lists every pod.
const maxLeftBehindNames = 10

// leftBehindText is the summary's line after "Replaced: ": "1 evicted pod
// left behind, replaced, not judged: shop/web-7d4f-x2"; "" for none. Pods
// left behind in more than one way are counted by way: "3 pods left
// behind (2 evicted, 1 shut down), replaced, not judged: ...".
func leftBehindText(pods []check.LeftBehindPod) string {
	if len(pods) == 0 {
		return ""
	}
	ways := map[string]int{}
	names := make([]string, 0, min(len(pods), maxLeftBehindNames))
	for i, p := range pods {
		ways[leftBehindWay(p)]++
		if i < maxLeftBehindNames {
			name := p.Namespace + "/" + p.Name
			if p.Context != "" {
				name += " (context " + p.Context + ")"
			}
			names = append(names, name)
		}
	}
	var head string
	if len(ways) == 1 {
		head = fmt.Sprintf("%d %s %s left behind", len(pods), leftBehindWay(pods[0]), text.Plural(len(pods), "pod", "pods"))
	} else {
		var parts []string
		for way, n := range ways {
			parts = append(parts, fmt.Sprintf("%d %s", n, way))
		}
		sort.Strings(parts)
		head = fmt.Sprintf("%d pods left behind (%s)", len(pods), strings.Join(parts, ", "))
	}
	list := strings.Join(names, ", ")
	if more := len(pods) - len(names); more > 0 {
		list += fmt.Sprintf(", and %d more", more)
	}
	return head + ", replaced, not judged: " + list
}
