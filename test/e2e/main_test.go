// Package e2e proves the contract's stream rows ("Which pods", "What is
// printed", "How it runs") end to end: the real kubectl-podsync binary, run
// as `kubectl podsync` through the pinned kubectl's plugin discovery,
// against a local control plane (see test/harness).
package e2e

import (
	"os"
	"testing"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

var env *harness.Env

func TestMain(m *testing.M) { os.Exit(harness.Main(m, harness.Config{}, &env)) }
