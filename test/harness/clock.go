package harness

import (
	"os"
	"regexp"
	"testing"
	"time"
)

// At -v=1 podsync logs when its clock starts, the clock that --timeout
// counts on (pkg/cmd's runBounded). klog's header holds the local time to
// the microsecond, without the year.
var clockLine = regexp.MustCompile(`(?m)^I(\d{4} \d\d:\d\d:\d\d\.\d{6})\s+\d+ \S+\] "The command's clock starts"`)

// ClockStart is when podsync's clock started, as the process logged it at
// -v=1. Time bounds measured from it leave out what a loaded machine adds
// before: kubectl's start, the exec of the plugin, the runtime's start.
func ClockStart(t testing.TB, stderr string) time.Time {
	t.Helper()
	m := clockLine.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no clock-start line in stderr (is -v=1 given?):\n%s", stderr)
	}
	at, err := time.ParseInLocation("0102 15:04:05.000000", m[1], time.Local)
	if err != nil {
		t.Fatalf("clock-start line: %v", err)
	}
	now := time.Now()
	at = at.AddDate(now.Year(), 0, 0)
	if at.After(now.Add(24 * time.Hour)) { // logged in December, read in January
		at = at.AddDate(-1, 0, 0)
	}
	return at
}

// SinceClock is how long after podsync's clock started (see ClockStart)
// the command r ended.
func SinceClock(t testing.TB, r Result) time.Duration {
	t.Helper()
	return r.Ended.Sub(ClockStart(t, r.Stderr))
}

// WrittenAt is when path was last written: for a file a test's helper
// process writes as it starts (a credential plugin's PID file), when that
// process started, by the kernel's clock.
func WrittenAt(t testing.TB, path string) time.Time {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}
