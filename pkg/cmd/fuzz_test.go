package cmd

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// FuzzDurationFlags feeds any text to --timeout and --resync, the way the
// command reads them (pflag, then Validate's checks): a value is accepted
// exactly when Go parses it as a duration that is not negative (for
// --resync: 0, or at least a second), and a refusal is a usage error
// (exit 2) on one line.
func FuzzDurationFlags(f *testing.F) {
	for _, s := range []string{"0", "5s", "1m30s", "-1s", "1y", "10", "", " 5s", "1.5h", "9223372036854775807ns",
		"9999999999h", "5x", "+5s", "-0", ".5s", "1e3s", "\n5s", "1ns", "999ms", "1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, perr := time.ParseDuration(s)
		for _, flag := range []string{"timeout", "resync"} {
			err := parseDurationFlag(flag, s)
			accepted := perr == nil && want >= 0 && (flag != "resync" || want == 0 || want >= minResync)
			switch {
			case accepted && err != nil:
				t.Fatalf("--%s=%q refused: %v", flag, s, err)
			case !accepted && err == nil:
				t.Fatalf("--%s=%q accepted", flag, s)
			case err != nil && ExitCode(err) != 2:
				t.Fatalf("--%s=%q: exit code %d, want 2 (%v)", flag, s, ExitCode(err), err)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Fatalf("--%s=%q: error is not one line: %q", flag, s, err)
			}
		}
	})
}

// parseDurationFlag parses --NAME=value with the command's flags and runs
// the checks Validate makes of numbers.
func parseDurationFlag(name, value string) error {
	o := NewOptions(genericiooptions.NewTestIOStreamsDiscard())
	c := &cobra.Command{}
	o.AddFlags(c)
	if err := c.Flags().Parse([]string{"--" + name + "=" + value}); err != nil {
		return asUsage(err)
	}
	return o.validateNumbers()
}
