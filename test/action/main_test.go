// Package action runs the repository's GitHub Action (action.yml) the way
// the runner does: each `run:` step in bash with the runner's environment
// (RUNNER_OS, RUNNER_ARCH, RUNNER_TEMP, GITHUB_OUTPUT, GITHUB_PATH, ...),
// the steps read from action.yml itself, against release archives built by
// hack/dist.sh and served from loopback, and kubectl podsync gating pods of
// a local control plane.
package action

import (
	"os"
	"testing"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

var env *harness.Env

func TestMain(m *testing.M) { os.Exit(harness.Main(m, harness.Config{Nodes: 1}, &env)) }
