package version

import (
	"strings"
	"testing"
)

func TestStringPrefersTheStampedVersion(t *testing.T) {
	defer func(v string) { Version = v }(Version)
	Version = "v1.2.3"
	if got := String(); got != "v1.2.3" {
		t.Fatalf("String() = %q, want the stamped v1.2.3", got)
	}
}

// Unstamped, the version is still one krew and semver accept.
func TestStringWithoutStamp(t *testing.T) {
	defer func(v string) { Version = v }(Version)
	Version = ""
	if got := String(); !strings.HasPrefix(got, "v") {
		t.Fatalf("String() = %q, want a version starting with v", got)
	}
}
