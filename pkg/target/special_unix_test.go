//go:build unix

package target

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

// A device or a FIFO (what `-f <(kustomize build)` passes) has no size to
// go by: it is read, bounded like stdin, and decoded as a manifest.
func TestParseSpecialFiles(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	_, err := Parse(Input{Filenames: []string{"/dev/zero"}, Namespace: "shop"})
	if !errors.Is(err, errTooLarge) {
		t.Fatalf("-f /dev/zero: error = %v, want %v", err, errTooLarge)
	}
	fifo := filepath.Join(t.TempDir(), "manifest")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		_, _ = f.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n")
	}()
	p, err := Parse(Input{Filenames: []string{fifo}, Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	want := []check.Target{{APIVersion: "v1", Kind: "ConfigMap", Name: "settings"}}
	if !reflect.DeepEqual(p.files, want) {
		t.Errorf("targets = %+v, want %+v", p.files, want)
	}
}
