// Package soak runs podsync for a while under churn, with API server
// restarts, and checks that its live heap follows the pods it holds, not
// the number of changes it has seen. `make test` runs a short soak;
// `make soak` runs a long one (see docs/design.md, "Memory").
package soak

import (
	"os"
	"testing"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

var env *harness.Env

func TestMain(m *testing.M) { os.Exit(harness.Main(m, harness.Config{}, &env)) }
