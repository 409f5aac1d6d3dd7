// Package compare runs podsync's check next to `kubectl rollout status` and
// `kubectl wait` on the same workloads of a local control plane, started at
// the same moment, and holds podsync to them: its exit code agrees with
// kubectl's whenever kubectl decides within the timeout, a success is never
// reported more than a second before kubectl's, and where kubectl cannot
// decide (it waits for ever, or refuses the kind) podsync gives its
// documented answer.
//
// Every scenario runs in its own namespace, all of them at once: they spend
// their time waiting on the controllers and kwok, not on the CPU.
package compare

import (
	"flag"
	"os"
	"strconv"
	"testing"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

var env *harness.Env

func TestMain(m *testing.M) {
	flag.Parse()
	// go test runs GOMAXPROCS parallel tests at a time unless told: on a
	// small machine the scenarios would take turns for minutes.
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(len(scenarios())))
	}
	os.Exit(harness.Main(m, harness.Config{}, &env))
}
