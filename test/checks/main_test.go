// Package checks proves the contract's "Checks for CI" and "Exit codes"
// end to end: the real plugin, run as `kubectl podsync` by the pinned
// kubectl, judging real workloads (Deployments, Jobs, pods in broken states
// played by kwok) on a local control plane. Every test asserts the exit
// code, what stdout and stderr say, and logs how long the verdict took.
package checks

import (
	"os"
	"testing"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

var env *harness.Env

func TestMain(m *testing.M) { os.Exit(harness.Main(m, harness.Config{}, &env)) }
