// Command kubectl_complete-podsync gives kubectl shell completion for the
// podsync plugin: kubectl runs it with the words typed after
// `kubectl podsync`, and it asks the plugin through cobra's __complete.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	plugin, err := findPlugin()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubectl_complete-podsync:", err)
		return 1
	}
	cmd := exec.Command(plugin, append([]string{"__complete"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "kubectl_complete-podsync:", err)
		return 1
	}
	return 0
}

// findPlugin prefers the kubectl-podsync beside this program (they ship in
// one archive), then the one on PATH.
func findPlugin() (string, error) {
	name := "kubectl-podsync"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if self, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(self); err == nil {
			candidate := filepath.Join(filepath.Dir(real), name)
			if _, err := os.Stat(candidate); err == nil {
				return candidate, nil
			}
		}
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("find %s: %w", name, err)
	}
	return path, nil
}
