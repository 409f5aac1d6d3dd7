package main

import (
	"os"
	"os/exec"
	"testing"

	"k8s.io/kubectl/pkg/util/i18n"
)

// The plugin's imports must leave kubectl's catalogues unread (see package
// english): under a Japanese locale, a string that kubectl's catalogue
// translates stays English. The check runs in a child of this test
// binary, whose locale is set before its packages are initialized.
func TestKubectlCataloguesUnread(t *testing.T) {
	const msg = "Display one or many resources" // translated in ja_JP
	if os.Getenv("PODSYNC_TEST_LOCALE_CHILD") == "1" {
		if got := i18n.T(msg); got != msg {
			t.Fatalf("translated to %q: kubectl's catalogue was read", got)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKubectlCataloguesUnread$", "-test.count=1")
	cmd.Env = append(os.Environ(), "PODSYNC_TEST_LOCALE_CHILD=1", "LC_ALL=ja_JP.UTF-8")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}
