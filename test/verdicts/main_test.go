// Package verdicts plays random scenarios on a local control plane (kwok
// nodes) and holds podsync's verdict to `kubectl rollout status` /
// `kubectl wait` and kstatus, started at the same moments on the same
// target. See verdicts_test.go for how to run and reproduce a seed.
package verdicts

import (
	"flag"
	"os"
	"testing"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

var env *harness.Env

func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", envOr("VERDICTS_PARALLEL", "6"))
	}
	// The plugin runs hundreds of times in a soak: built without the race
	// detector it costs a fraction of the CPU (the other end-to-end suites
	// run it with -race).
	os.Exit(harness.Main(m, harness.Config{NoRace: true}, &env))
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
