package output

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/internal/ghactions"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

func TestStabilityInSummary(t *testing.T) {
	broken := check.NewStability(30*time.Second, 0, check.WindowBroken)
	broken.BrokenBy(check.Failure{Key: "shop/web-1", Reason: check.ReasonRestarted, Container: "app", Message: "restarts 0 -> 1"}, 10200*time.Millisecond)
	for _, c := range []struct {
		st   *check.Stability
		text string
		md   string
	}{
		{check.NewStability(30*time.Second, 30*time.Second, check.WindowHeld), "held for 30s", "held for 30s"},
		{broken, `broken 10s into 30s: pod shop/web-1: container "app" restarted (restarts 0 -> 1)`,
			`broken 10s into 30s: pod shop/web-1: container "app" restarted \(restarts 0 -&gt; 1\)`},
		{check.NewStability(time.Minute, 6*time.Second, check.WindowCutShort), "cut short 6s into 1m0s: the run ended first", "cut short 6s into 1m0s: the run ended first"},
		{check.NewStability(time.Minute, 0, check.WindowNotOpened), "1m0s not opened: the check was never met", "1m0s not opened: the check was never met"},
	} {
		s := check.Summary{Verdict: "met", Stability: c.st}
		var b bytes.Buffer
		if err := WriteSummaryText(&b, s); err != nil {
			t.Fatal(err)
		}
		if want := "\nStable:   " + c.text + "\nPods:"; !strings.Contains(b.String(), want) {
			t.Errorf("text summary:\n%s\nwant %q", b.String(), want)
		}
		b.Reset()
		if err := WriteSummaryMarkdown(&b, s, ghactions.MaxStepSummary); err != nil {
			t.Fatal(err)
		}
		if want := "Stability window (--stable-for): " + c.md + "\n"; !strings.Contains(b.String(), want) {
			t.Errorf("Markdown summary:\n%s\nwant %q", b.String(), want)
		}
	}
	var b bytes.Buffer
	if err := WriteSummaryJSON(&b, check.Summary{Stability: broken}); err != nil {
		t.Fatal(err)
	}
	want := `"stability":{"stableForSeconds":30,"outcome":"broken","heldSeconds":10.2,"reason":"Restarted","pod":"shop/web-1","container":"app","message":"restarts 0 -> 1"}`
	if !strings.Contains(b.String(), want) {
		t.Errorf("JSON %s\nwant %s", b.String(), want)
	}
	var got map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := WriteSummaryJSON(&b, check.Summary{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "stability") {
		t.Errorf("JSON without a window has stability: %s", b.String())
	}
}
