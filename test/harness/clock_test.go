package harness

import (
	"bytes"
	"flag"
	"os"
	"testing"
	"time"

	"k8s.io/klog/v2"
)

// ClockStart reads the line as klog writes it, header and all.
func TestClockStartReadsKlogsLine(t *testing.T) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for k, v := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL", "v": "1"} {
		if err := fs.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	klog.SetOutput(&buf)
	defer klog.SetOutput(os.Stderr)
	before := time.Now()
	klog.V(1).InfoS("The command's clock starts", "timeout", 8*time.Second)
	klog.Flush()
	after := time.Now()
	at := ClockStart(t, "some line\n"+buf.String()+"Verdict:  done\n")
	// klog writes microseconds: at may be up to 1µs before before.
	if at.Before(before.Add(-time.Microsecond)) || at.After(after) {
		t.Errorf("clock start %s, want between %s and %s (from %q)", at, before, after, buf.String())
	}
}
