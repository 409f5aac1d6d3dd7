// Package faults proves end to end what podsync does when things go wrong:
// control-plane processes killed and restarted, a cut network, watches that
// expire or whose resourceVersion was compacted away, a burst of changes,
// refusals (unreachable, TLS, credentials, RBAC), bad input, signals and a
// reader that closes stdout early. Fault tests kill parts of their cluster,
// so each of them starts its own (see newCluster); tests that only need a
// healthy cluster share one (see sharedCluster).
package faults

import (
	"fmt"
	"os"
	"testing"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

var env *harness.Env

func TestMain(m *testing.M) {
	code := harness.Main(m, harness.Config{NoCluster: true}, &env)
	if err := stopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
