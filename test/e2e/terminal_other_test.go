//go:build !linux

package e2e

import (
	"os/exec"
	"testing"
)

func runOnTerminal(t *testing.T, _ *exec.Cmd) string {
	t.Skip("pseudo-terminals are only set up on Linux")
	return ""
}
