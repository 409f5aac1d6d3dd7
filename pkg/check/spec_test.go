package check

import (
	"reflect"
	"strings"
	"testing"
)

func TestFlagsSpec(t *testing.T) {
	tests := []struct {
		name        string
		flags       Flags
		conds       string
		failOn      []string
		requiredPod int
	}{
		{
			name:  "until with default fail-on",
			flags: Flags{Until: "ready", UntilSet: true, MinPods: Unset, MaxRestarts: Unset},
			conds: "ready", failOn: DefaultFailOn(), requiredPod: 1,
		},
		{
			name:  "gone defaults to zero pods",
			flags: Flags{Until: "gone", UntilSet: true, MinPods: Unset, MaxRestarts: Unset},
			conds: "gone", failOn: DefaultFailOn(), requiredPod: 0,
		},
		{
			name:  "explicit min pods",
			flags: Flags{Until: "healthy", UntilSet: true, MinPods: 3, MaxRestarts: 2},
			conds: "healthy", failOn: DefaultFailOn(), requiredPod: 3,
		},
		{
			name:  "gone with min pods 0",
			flags: Flags{Until: "gone", UntilSet: true, MinPods: 0, MaxRestarts: Unset},
			conds: "gone", failOn: DefaultFailOn(), requiredPod: 0,
		},
		{
			name:  "fail-on none",
			flags: Flags{Until: "ready", UntilSet: true, FailOn: "none", FailOnSet: true, MinPods: Unset, MaxRestarts: Unset},
			conds: "ready", failOn: nil, requiredPod: 1,
		},
		{
			name:  "fail-on without until has no default",
			flags: Flags{FailOn: "Evicted", FailOnSet: true, MinPods: Unset, MaxRestarts: Unset},
			conds: "", failOn: []string{"Evicted"}, requiredPod: 1,
		},
		{
			name:  "nothing",
			flags: Flags{MinPods: Unset, MaxRestarts: Unset},
			conds: "", failOn: nil, requiredPod: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := tt.flags.Spec()
			if err != nil {
				t.Fatalf("Spec(): %v", err)
			}
			if got := FormatConditions(s.Conditions); got != tt.conds {
				t.Errorf("conditions = %q, want %q", got, tt.conds)
			}
			if !reflect.DeepEqual(s.FailOn, tt.failOn) {
				t.Errorf("FailOn = %q, want %q", s.FailOn, tt.failOn)
			}
			if got := s.RequiredPods(); got != tt.requiredPod {
				t.Errorf("RequiredPods() = %d, want %d", got, tt.requiredPod)
			}
		})
	}
}

func TestFlagsSpecErrors(t *testing.T) {
	tests := []struct {
		name  string
		flags Flags
		want  string
	}{
		{"empty until", Flags{UntilSet: true, MinPods: Unset, MaxRestarts: Unset}, `invalid --until value ""`},
		{"bad until", Flags{Until: "redy", MinPods: Unset, MaxRestarts: Unset}, `invalid --until condition "redy"`},
		{"empty fail-on", Flags{Until: "ready", FailOnSet: true, MinPods: Unset, MaxRestarts: Unset}, `invalid --fail-on value ""`},
		{"negative min pods", Flags{Until: "ready", MinPods: -2, MaxRestarts: Unset}, `invalid --min-pods -2: must be 0 or more`},
		{"negative max restarts", Flags{Until: "ready", MinPods: Unset, MaxRestarts: -5}, `invalid --max-restarts -5: must be 0 or more`},
		{"min pods without until", Flags{MinPods: 2, MaxRestarts: Unset}, `--min-pods needs --until`},
		{"max restarts without until", Flags{MinPods: Unset, MaxRestarts: 0}, `--max-restarts needs --until`},
		{"gone with min pods", Flags{Until: "gone", MinPods: 1, MaxRestarts: Unset}, `--min-pods 1 cannot be used with --until gone`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.flags.Spec()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Spec() error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestSpecValidateBuiltInGo(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"zero keyword", Spec{Conditions: []Condition{{}}, MinPods: Unset, MaxRestarts: Unset}, `invalid --until condition "Kind(0)"`},
		{"duplicate", Spec{Conditions: []Condition{{Keyword: KeywordReady}, {Keyword: KeywordReady}}, MinPods: Unset, MaxRestarts: Unset}, `given twice`},
		{"bad status", Spec{Conditions: []Condition{{Keyword: KeywordPodCondition, Type: "Ready", Status: "Maybe"}}, MinPods: Unset, MaxRestarts: Unset}, `STATUS "Maybe"`},
		{"bad reason", Spec{FailOn: []string{"no way"}, MinPods: Unset, MaxRestarts: Unset}, `invalid --fail-on value`},
		{"zero value", Spec{}, `--min-pods needs --until`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() error = %v, want %q", err, tt.want)
			}
		})
	}
}
