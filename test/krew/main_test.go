// Package krew proves the release end to end: hack/dist.sh on a snapshot of
// the work tree tagged with a version, the krew manifest rendered for its
// archive, the real krew installing it into a temporary KREW_ROOT, the
// installed plugin run through krew's link against a local control plane,
// kubectl's shell completion through kubectl_complete-podsync, and krew
// uninstalling it.
package krew

import (
	"os"
	"testing"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

var env *harness.Env

func TestMain(m *testing.M) { os.Exit(harness.Main(m, harness.Config{Nodes: 1}, &env)) }
