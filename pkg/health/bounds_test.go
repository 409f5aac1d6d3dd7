package health

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// bigList is a custom resource whose status holds n items.
func bigList(n int) *unstructured.Unstructured {
	items := make([]any, n)
	for i := range items {
		items[i] = m{"name": fmt.Sprintf("item-%d", i), "ready": "True"}
	}
	return object("example.com/v1", "Big", 1, m{"items": items})
}

// bigMessage is a custom resource whose status.message is n bytes.
func bigMessage(n int) *unstructured.Unstructured {
	return object("example.com/v1", "Big", 1, m{"message": strings.Repeat("a", n)})
}

func bigRule(t *testing.T, current string) *Rules {
	t.Helper()
	return mustParse(t, fmt.Sprintf("- apiVersion: example.com/v1\n  kind: Big\n  current: %q\n", current))
}

// judgeTimed judges obj and fails when the judgement used more than
// within of CPU time on each of the machine's two cores. CPU time, not
// wall time: on a loaded machine the deadline passes with little work
// done, while an evaluation nothing stops burns CPU for as long as it
// runs (seconds to a minute for the rules below).
func judgeTimed(t *testing.T, ctx context.Context, rs *Rules, obj *unstructured.Unstructured, within time.Duration) check.TargetStatus {
	t.Helper()
	before := processCPU(t)
	v := rs.JudgeContext(ctx, obj, customKind)
	if used := processCPU(t) - before; used > 2*within {
		t.Errorf("the judgement used %s of CPU, want at most %s (%q)", used, 2*within, v.Message)
	}
	return v
}

// TestSlowRuleStops: a rule quadratic in a 3,000-item status list is
// stopped by its deadline or its cost limit, waits, and says it took too
// long; it never passes.
func TestSlowRuleStops(t *testing.T) {
	rs := bigRule(t, "status.items.all(a, status.items.exists(b, b.name == a.name))")
	v := judgeTimed(t, context.Background(), rs, bigList(3000), evalTimeout+500*time.Millisecond)
	if v.State != check.Pending || !strings.Contains(v.Message, "took too long") {
		t.Errorf("Judge = %v %q, want pending, took too long", v.State, v.Message)
	}
}

// TestRunEndInterruptsRule: the run's end interrupts an evaluation at
// once, whatever its deadline.
func TestRunEndInterruptsRule(t *testing.T) {
	rs := bigRule(t, "status.items.all(a, status.items.all(b, status.items.exists(c, c.name == a.name)))")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	v := judgeTimed(t, ctx, rs, bigList(3000), 300*time.Millisecond)
	if v.State != check.Pending || !strings.Contains(v.Message, "stopped unfinished when the run ended") {
		t.Errorf("Judge = %v %q, want pending, stopped", v.State, v.Message)
	}
}

// TestRegexOverHugeString: a regular expression over a 1 MiB message
// ends within the deadline: a small pattern is matched, one whose
// program times the string is too much is refused.
func TestRegexOverHugeString(t *testing.T) {
	for _, tc := range []struct {
		name, rule string
		state      check.State
		msg        string
	}{
		{"small pattern", "status.message.matches('^a+$')", check.Met, "current is true"},
		{"constant large pattern", "status.message.matches('[a-z]{1,900}b')", check.Pending, "is more than podsync matches"},
		{"pattern from the object", "status.message.matches('[a-z]{1,' + string(size(status.message) % 1000) + '}b')", check.Pending, "is more than podsync matches"},
		{"string building", "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30].all(i, status.message.replace('a', 'bb').size() > 0)", check.Pending, "took too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := judgeTimed(t, context.Background(), bigRule(t, tc.rule), bigMessage(1<<20), evalTimeout+500*time.Millisecond)
			if v.State != tc.state || !strings.Contains(v.Message, tc.msg) {
				t.Errorf("Judge = %v %q, want %v with %q", v.State, v.Message, tc.state, tc.msg)
			}
		})
	}
}
