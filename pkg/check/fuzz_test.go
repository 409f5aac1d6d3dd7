package check

import (
	"reflect"
	"strings"
	"testing"
)

func FuzzParseConditions(f *testing.F) {
	for _, s := range []string{
		"ready", "READY,running", "gone", "gone,ready", "condition=Ready", "condition=Ready=false",
		"condition=example.com/gate=Unknown", "condition==", "ready,,", " healthy ", "running,succeeded",
		"condition=Ready,condition=ready", "succeeded,completed",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		conds, err := ParseConditions(s)
		if err != nil {
			if conds != nil {
				t.Fatalf("error %v with conditions %v", err, conds)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
			return
		}
		if len(conds) == 0 {
			t.Fatalf("ParseConditions(%q) succeeded with no conditions", s)
		}
		again, err := ParseConditions(FormatConditions(conds))
		if err != nil {
			t.Fatalf("round trip of %q via %q: %v", s, FormatConditions(conds), err)
		}
		if !reflect.DeepEqual(again, conds) {
			t.Fatalf("round trip of %q: %v, want %v", s, again, conds)
		}
		spec := Spec{Conditions: conds, MinPods: Unset, MaxRestarts: Unset}
		if err := spec.Validate(); err != nil {
			t.Fatalf("parsed conditions %v do not validate: %v", conds, err)
		}
	})
}

func FuzzParseReasons(f *testing.F) {
	for _, s := range []string{
		"none", "NONE", defaultFailOn, "crashloopbackoff", "Failed,failed", "a,,b", "Bad-Reason",
		"none,Failed", " Evicted ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		reasons, err := ParseReasons(s)
		if err != nil {
			if reasons != nil {
				t.Fatalf("error %v with reasons %v", err, reasons)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
			return
		}
		for _, r := range reasons {
			if !isReasonWord(r) || len(r) > maxReasonLen {
				t.Fatalf("ParseReasons(%q) accepted %q", s, r)
			}
		}
		again, err := ParseReasons(FormatReasons(reasons))
		if err != nil {
			t.Fatalf("round trip of %q via %q: %v", s, FormatReasons(reasons), err)
		}
		if !reflect.DeepEqual(again, reasons) {
			t.Fatalf("round trip of %q: %q, want %q", s, again, reasons)
		}
	})
}
