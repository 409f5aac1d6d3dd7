package check

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseReasons(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"none", nil},
		{" NONE ", nil},
		{"CrashLoopBackOff", []string{"CrashLoopBackOff"}},
		{"crashloopbackoff,oomkilled", []string{"CrashLoopBackOff", "OOMKilled"}},
		{" Evicted , Failed ", []string{"Evicted", "Failed"}},
		{"MyCustomReason2", []string{"MyCustomReason2"}},
		{"outofcpu", []string{"OutOfcpu"}},
		{defaultFailOn, DefaultFailOn()},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseReasons(tt.in)
			if err != nil {
				t.Fatalf("ParseReasons(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseReasons(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseReasonsErrors(t *testing.T) {
	long := strings.Repeat("A", maxReasonLen+1)
	tests := []struct {
		in, want string
	}{
		{"", `invalid --fail-on value "": want REASON[,REASON...] or none`},
		{" ", `want REASON[,REASON...] or none`},
		{"CrashLoopBackOff,", `invalid --fail-on value "CrashLoopBackOff,": empty reason in the list`},
		{",Failed", `empty reason in the list`},
		{"Failed,,Evicted", `empty reason in the list`},
		{"none,Failed", `none cannot be combined with reasons`},
		{"Failed,NONE", `none cannot be combined with reasons`},
		{"Failed,failed", `reason "Failed" given twice`},
		{"Crash-Loop", `reason "Crash-Loop": want a word of letters and digits like CrashLoopBackOff`},
		{"Crash Loop", `reason "Crash Loop"`},
		{"1Reason", `reason "1Reason"`},
		{"Reason!", `reason "Reason!"`},
		{"Ünicode", `reason "Ünicode"`},
		{"a;rm -rf", `reason "a;rm -rf"`},
		{long, `is longer than 128 characters`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseReasons(tt.in)
			if err == nil {
				t.Fatalf("ParseReasons(%q) = %q, want error", tt.in, got)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestDefaultFailOn(t *testing.T) {
	want := []string{"CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "InvalidImageName",
		"CreateContainerConfigError", "CreateContainerError", "RunContainerError", "Failed"}
	got := DefaultFailOn()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DefaultFailOn() = %q, want %q", got, want)
	}
	got[0] = "changed"
	if DefaultFailOn()[0] != "CrashLoopBackOff" {
		t.Error("DefaultFailOn returned shared storage")
	}
	if FormatReasons(nil) != "none" {
		t.Errorf("FormatReasons(nil) = %q, want none", FormatReasons(nil))
	}
}

// defaultFailOn is the default --fail-on value as the contract writes it.
const defaultFailOn = "CrashLoopBackOff,ImagePullBackOff,ErrImagePull,InvalidImageName," +
	"CreateContainerConfigError,CreateContainerError,RunContainerError,Failed"

func TestDefaultFailOnIsTheContracts(t *testing.T) {
	if got := FormatReasons(DefaultFailOn()); got != defaultFailOn {
		t.Errorf("default --fail-on %s, the contract says %s", got, defaultFailOn)
	}
}
