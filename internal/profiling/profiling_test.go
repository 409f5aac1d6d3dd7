package profiling

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// Without the settings nothing is served or written; with them, the pprof
// handlers answer on the address said on stderr, and the heap profile is
// written at exit.
func TestStart(t *testing.T) {
	var quiet bytes.Buffer
	Start(func(string) string { return "" }, &quiet)()
	if quiet.Len() != 0 {
		t.Errorf("without the settings: %q", quiet.String())
	}

	path := filepath.Join(t.TempDir(), "heap.pprof")
	env := map[string]string{AddressEnv: "127.0.0.1:0", HeapProfileEnv: path}
	var errOut bytes.Buffer
	stop := Start(func(k string) string { return env[k] }, &errOut)
	m := regexp.MustCompile(`^podsync: profiling at (http://127\.0\.0\.1:\d+/debug/pprof/)\n$`).FindStringSubmatch(errOut.String())
	if m == nil {
		t.Fatalf("stderr: %q", errOut.String())
	}
	resp, err := http.Get(m[1] + "heap?gc=1&debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("# HeapAlloc = ")) {
		t.Errorf("heap profile: %s\n%.300s", resp.Status, body)
	}
	stop()
	profile, err := os.ReadFile(path)
	if err != nil || len(profile) < 2 || profile[0] != 0x1f || profile[1] != 0x8b {
		t.Errorf("heap profile file: %v, %d bytes (want a gzipped profile)", err, len(profile))
	}
}

// An address that cannot be listened on is said, and the run goes on.
func TestStartBadAddress(t *testing.T) {
	var errOut bytes.Buffer
	Start(func(k string) string {
		if k == AddressEnv {
			return "no-such-host.invalid:x"
		}
		return ""
	}, &errOut)()
	if !regexp.MustCompile(`^podsync: PODSYNC_PPROF: listen: `).MatchString(errOut.String()) {
		t.Errorf("stderr: %q", errOut.String())
	}
}
