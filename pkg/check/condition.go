package check

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/podview"
)

// Keyword says which test a Condition applies to a pod: its --until keyword.
type Keyword int

// The keywords of --until conditions.
const (
	KeywordReady Keyword = iota + 1
	KeywordRunning
	KeywordSucceeded
	KeywordCompleted
	KeywordHealthy
	KeywordGone
	KeywordPodCondition
)

// Condition is one item of --until. Type and Status are only set for
// KeywordPodCondition; Status is always one of True, False or Unknown.
type Condition struct {
	Keyword Keyword
	Type    corev1.PodConditionType
	Status  corev1.ConditionStatus
}

// conditionForm is how condition=... is written in usage text.
const conditionForm = "condition=TYPE[=STATUS]"

// keywords is the one table of --until keywords, in the order usage text,
// completion and the README list them; every other list derives from it.
var keywords = []struct {
	name    string
	keyword Keyword
	// help completes "a pod satisfies it when ...".
	help string
}{
	{"ready", KeywordReady, "its Ready condition is True"},
	{"running", KeywordRunning, "its phase is Running"},
	{"succeeded", KeywordSucceeded, "its phase is Succeeded"},
	{"completed", KeywordCompleted, "its phase is Succeeded or Failed"},
	{"healthy", KeywordHealthy, "it is ready, or its phase is Succeeded"},
	{"gone", KeywordGone, "no matching pod is left"},
}

// Keywords lists the --until values in the table's order, condition=
// last, as usage text and completion offer them.
func Keywords() []string {
	out := make([]string, 0, len(keywords)+1)
	for _, k := range keywords {
		out = append(out, k.name)
	}
	return append(out, conditionForm)
}

func wantConditions() string {
	return "want one of " + strings.Join(Keywords(), ", ")
}

// knownConditionTypes lets condition=ready print as condition=Ready:
// types are matched case-insensitively (like kubectl wait), so showing
// the canonical spelling is only cosmetic.
var knownConditionTypes = []corev1.PodConditionType{
	corev1.PodReady,
	corev1.ContainersReady,
	corev1.PodInitialized,
	corev1.PodScheduled,
	corev1.DisruptionTarget,
	corev1.PodReadyToStartContainers,
	corev1.PodResizePending,
	corev1.PodResizeInProgress,
}

// String gives the canonical --until spelling; ParseConditions of it
// yields the same Condition.
func (c Condition) String() string {
	if c.Keyword == KeywordPodCondition {
		if c.Status == corev1.ConditionTrue {
			return "condition=" + string(c.Type)
		}
		return "condition=" + string(c.Type) + "=" + string(c.Status)
	}
	for _, k := range keywords {
		if k.keyword == c.Keyword {
			return k.name
		}
	}
	return fmt.Sprintf("Kind(%d)", int(c.Keyword))
}

// SatisfiedBy reports whether pod meets the condition now. Gone is never
// satisfied by a pod that still exists.
func (c Condition) SatisfiedBy(pod *corev1.Pod) bool {
	phase := pod.Status.Phase
	switch c.Keyword {
	case KeywordReady:
		return podview.Ready(pod)
	case KeywordRunning:
		return phase == corev1.PodRunning
	case KeywordSucceeded:
		return phase == corev1.PodSucceeded
	case KeywordCompleted:
		return podview.Finished(pod)
	case KeywordHealthy:
		return podview.Healthy(pod)
	case KeywordPodCondition:
		return podview.ConditionStatus(pod, c.Type) == c.Status
	}
	return false
}

// ParseConditions parses the value of --until: a comma list of
// conditions. Names are case-insensitive and blanks around items are
// ignored. Empty items, duplicates, gone combined with anything and
// phases that can never hold together are errors, each one line long.
func ParseConditions(s string) ([]Condition, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("invalid --until value %q: %s", s, wantConditions())
	}
	items := strings.Split(s, ",")
	conds := make([]Condition, 0, len(items))
	for _, item := range items {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("invalid --until value %q: empty condition in the list", s)
		}
		c, err := parseCondition(item)
		if err != nil {
			return nil, fmt.Errorf("invalid --until condition %q: %w", item, err)
		}
		conds = append(conds, c)
	}
	if err := checkConditions(conds); err != nil {
		return nil, fmt.Errorf("invalid --until value %q: %w", s, err)
	}
	return conds, nil
}

// FormatConditions joins conditions back into a --until value.
func FormatConditions(conds []Condition) string {
	parts := make([]string, len(conds))
	for i, c := range conds {
		parts[i] = c.String()
	}
	return strings.Join(parts, ",")
}

func parseCondition(item string) (Condition, error) {
	for _, k := range keywords {
		if strings.EqualFold(item, k.name) {
			return Condition{Keyword: k.keyword}, nil
		}
	}
	name, rest, found := strings.Cut(item, "=")
	if !found || !strings.EqualFold(name, "condition") {
		return Condition{}, errors.New(wantConditions())
	}
	return parsePodCondition(rest)
}

// parsePodCondition parses the TYPE[=STATUS] part of condition=....
func parsePodCondition(rest string) (Condition, error) {
	typ, status, hasStatus := strings.Cut(rest, "=")
	if typ == "" {
		return Condition{}, errors.New("missing TYPE in condition=TYPE[=STATUS]")
	}
	// Readiness gates use qualified names (example.com/feature), the
	// same rule the API server applies to condition types.
	if errs := validation.IsQualifiedName(typ); len(errs) > 0 {
		return Condition{}, fmt.Errorf("bad TYPE %q: %s", typ, errs[0])
	}
	c := Condition{Keyword: KeywordPodCondition, Type: canonicalType(typ), Status: corev1.ConditionTrue}
	if !hasStatus {
		return c, nil
	}
	st, ok := parseStatus(status)
	if !ok {
		return Condition{}, fmt.Errorf("STATUS %q must be True, False or Unknown", status)
	}
	c.Status = st
	return c, nil
}

func canonicalType(typ string) corev1.PodConditionType {
	for _, known := range knownConditionTypes {
		if strings.EqualFold(typ, string(known)) {
			return known
		}
	}
	return corev1.PodConditionType(typ)
}

func parseStatus(s string) (corev1.ConditionStatus, bool) {
	for _, st := range []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown} {
		if strings.EqualFold(s, string(st)) {
			return st, true
		}
	}
	return "", false
}

// checkConditions rejects lists that are wrong as a whole. Impossible
// combinations are refused here because otherwise the check would only
// end at --timeout with a misleading "not met".
func checkConditions(conds []Condition) error {
	seen := make(map[string]bool, len(conds))
	for _, c := range conds {
		if c.Keyword == KeywordGone && len(conds) > 1 {
			return errors.New("gone cannot be combined with other conditions")
		}
		key := c.String()
		if c.Keyword == KeywordPodCondition {
			key = "condition=" + strings.ToLower(string(c.Type))
		}
		if seen[key] {
			return fmt.Errorf("condition %q given twice", key)
		}
		seen[key] = true
	}
	return checkPhases(conds)
}

// phaseSets lists the phases each phase-based condition allows.
var phaseSets = map[Keyword][]corev1.PodPhase{
	KeywordRunning:   {corev1.PodRunning},
	KeywordSucceeded: {corev1.PodSucceeded},
	KeywordCompleted: {corev1.PodSucceeded, corev1.PodFailed},
}

// checkPhases refuses conditions whose phases exclude each other, such
// as running,succeeded.
func checkPhases(conds []Condition) error {
	for i, a := range conds {
		for _, b := range conds[i+1:] {
			pa, okA := phaseSets[a.Keyword]
			pb, okB := phaseSets[b.Keyword]
			if okA && okB && !overlap(pa, pb) {
				return fmt.Errorf("%s and %s can never hold at the same time", a, b)
			}
		}
	}
	return nil
}

func overlap(a, b []corev1.PodPhase) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

// hasGone reports whether conds is the gone check.
func hasGone(conds []Condition) bool {
	for _, c := range conds {
		if c.Keyword == KeywordGone {
			return true
		}
	}
	return false
}
