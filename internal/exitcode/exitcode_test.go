package exitcode

import (
	"errors"
	"os/exec"
	"runtime"
	"testing"
)

func TestOf(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs sh")
	}
	for _, tc := range []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"kill -TERM $$", 143},
		{"kill -INT $$", 130},
	} {
		if got := Of(exec.Command("sh", "-c", tc.script).Run()); got != tc.want {
			t.Errorf("sh -c %q: exit code %d, want %d", tc.script, got, tc.want)
		}
	}
	if got := Of(errors.New("exec: not found")); got != -1 {
		t.Errorf("an error that is not an exit: %d, want -1", got)
	}
}
