//go:build linux

package children

import (
	"os/exec"
	"testing"
)

// Kill ends a child, and sees none before one is started.
func TestKillEndsDescendants(t *testing.T) {
	Adopt()
	if hasChildren() {
		t.Fatal("a child before any was started")
	}
	cmd := exec.Command("sh", "-c", "sleep 60 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !hasChildren() {
		t.Fatal("no child seen while one runs")
	}
	Kill()
	if err := cmd.Wait(); err == nil {
		t.Fatal("the child ended well: it was not killed")
	}
}
