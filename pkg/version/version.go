// Package version holds the version stamped at build time with
//
//	-ldflags "-X github.com/kubectl-podsync/kubectl-podsync/pkg/version.Version=v1.2.3"
package version

import "runtime/debug"

// Version is set by the linker; see the Makefile.
var Version = ""

// String returns the stamped version, else the module version the binary
// was built from (go install …@v1.2.3), else v0.0.0-dev.
func String() string {
	if Version != "" {
		return Version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "v0.0.0-dev"
}
