// Package contexts proves `--context` over several clusters end to end:
// three local control planes side by side, each with its own
// CA, ports and tokens, and one kubeconfig with a context per cluster
// (podsync-1, podsync-2, podsync-3), watched by the real plugin run as
// `kubectl podsync` by the pinned kubectl.
package contexts

import (
	"os"
	"testing"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

var env *harness.Env

func TestMain(m *testing.M) { os.Exit(harness.Main(m, harness.Config{Clusters: 3}, &env)) }
