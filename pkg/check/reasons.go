package check

import (
	"errors"
	"fmt"
	"strings"
)

// ReasonFailed is the pseudo reason for a pod whose phase is Failed.
const ReasonFailed = "Failed"

// ReasonTooManyRestarts is the reason of a failure caused by --max-restarts.
const ReasonTooManyRestarts = "TooManyRestarts"

// maxReasonLen bounds a reason; real kubelet reasons are far shorter,
// so anything longer is a pasted mistake.
const maxReasonLen = 128

// reasons is the one table of the reasons the kubelet and controllers
// really report, the --fail-on defaults first, in the order usage text and
// completion show them. A user's spelling of a reason is replaced by the
// table's, so summaries print it the way kubectl does.
var reasons = []struct {
	name string
	// byDefault: fails a check with --until when --fail-on is not given.
	byDefault bool
}{
	{"CrashLoopBackOff", true}, {"ImagePullBackOff", true}, {"ErrImagePull", true}, {"InvalidImageName", true},
	{"CreateContainerConfigError", true}, {"CreateContainerError", true}, {"RunContainerError", true}, {ReasonFailed, true},
	{"ErrImageNeverPull", false}, {"ImageInspectError", false}, {"RegistryUnavailable", false}, {"SignatureValidationFailed", false},
	{"PreStartHookError", false}, {"PostStartHookError", false}, {"PreCreateHookError", false}, {"ContainerCannotRun", false},
	{"CreatePodSandboxError", false}, {"ConfigPodSandboxError", false}, {"KillPodSandboxError", false},
	{"OOMKilled", false}, {"Error", false}, {"Completed", false}, {"ContainerStatusUnknown", false}, {"DeadlineExceeded", false},
	{"Evicted", false}, {"NodeLost", false}, {"NodeAffinity", false}, {"Shutdown", false}, {"Terminated", false},
	{"UnexpectedAdmissionError", false}, {"OutOfcpu", false}, {"OutOfmemory", false}, {"OutOfpods", false},
}

// DefaultFailOn returns a fresh list of the default --fail-on reasons.
func DefaultFailOn() []string {
	var out []string
	for _, r := range reasons {
		if r.byDefault {
			out = append(out, r.name)
		}
	}
	return out
}

// KnownReasons returns every reason of the table, defaults first, for
// completion.
func KnownReasons() []string {
	out := make([]string, len(reasons))
	for i, r := range reasons {
		out[i] = r.name
	}
	return out
}

// ParseReasons parses the value of --fail-on. "none" alone (any case)
// returns no reasons, which turns the check off. Reasons are letters
// and digits starting with a letter, like CrashLoopBackOff; they are
// matched case-insensitively, so duplicates are detected that way too.
func ParseReasons(s string) ([]string, error) {
	if strings.EqualFold(strings.TrimSpace(s), "none") {
		return nil, nil
	}
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("invalid --fail-on value %q: want REASON[,REASON...] or none", s)
	}
	items := strings.Split(s, ",")
	reasons := make([]string, 0, len(items))
	seen := make(map[string]bool, len(items))
	for _, item := range items {
		r, err := parseReason(strings.TrimSpace(item))
		if err != nil {
			return nil, fmt.Errorf("invalid --fail-on value %q: %w", s, err)
		}
		if seen[strings.ToLower(r)] {
			return nil, fmt.Errorf("invalid --fail-on value %q: reason %q given twice", s, r)
		}
		seen[strings.ToLower(r)] = true
		reasons = append(reasons, r)
	}
	return reasons, nil
}

// FormatReasons joins reasons back into a --fail-on value; no reasons
// give "none".
func FormatReasons(reasons []string) string {
	if len(reasons) == 0 {
		return "none"
	}
	return strings.Join(reasons, ",")
}

func parseReason(item string) (string, error) {
	switch {
	case item == "":
		return "", errors.New("empty reason in the list")
	case strings.EqualFold(item, "none"):
		return "", errors.New("none cannot be combined with reasons")
	case len(item) > maxReasonLen:
		return "", fmt.Errorf("reason %.20q... is longer than %d characters", item, maxReasonLen)
	case !isReasonWord(item):
		return "", fmt.Errorf("reason %q: want a word of letters and digits like CrashLoopBackOff", item)
	}
	for _, known := range reasons {
		if strings.EqualFold(item, known.name) {
			return known.name, nil
		}
	}
	return item, nil
}

// isReasonWord accepts ASCII letters and digits, starting with a letter:
// the shape of every reason Kubernetes reports.
func isReasonWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		digit := c >= '0' && c <= '9'
		if !letter && (i == 0 || !digit) {
			return false
		}
	}
	return s != ""
}
