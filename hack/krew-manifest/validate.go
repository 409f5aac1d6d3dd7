package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// validate runs krew's own validator in full mode: it installs every
// platform of the manifest with `kubectl krew install`, downloading each
// archive from its uri, so the archives are served here on loopback.
func validate(o options, stdout, stderr io.Writer) error {
	if o.committed != "" {
		if err := checkCommitted(o); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "krew-manifest: %s matches the archives in %s\n", o.committed, o.dist)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen on loopback: %w", err)
	}
	files := &servedFiles{log: stderr}
	srv := &http.Server{Handler: files.wrap(http.FileServer(http.Dir(o.dist)))}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	manifest, err := render(o.template, o.dist, o.version, "http://"+ln.Addr().String(), o.partial)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "krew-validate-")
	if err != nil {
		return fmt.Errorf("temp folder: %w", err)
	}
	defer os.RemoveAll(tmp)
	// The validator takes the plugin name from the file name.
	file := filepath.Join(tmp, "podsync.yaml")
	if err := os.WriteFile(file, manifest, 0o644); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	cmd := exec.Command("validate-krew-manifest", "-manifest", file)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("validate-krew-manifest: %w", err)
	}
	return files.checkAll(archiveNames(manifest))
}

func checkCommitted(o options) error {
	want, err := render(o.template, o.dist, o.version, "", false)
	if err != nil {
		return err
	}
	got, err := os.ReadFile(o.committed)
	if err != nil {
		return fmt.Errorf("read committed manifest: %w", err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%s is not the manifest of the archives in %s (version %s): run make dist", o.committed, o.dist, o.version)
	}
	return nil
}

// archiveNames lists the file names of the manifest's uris.
func archiveNames(manifest []byte) []string {
	var names []string
	for _, l := range strings.Split(string(manifest), "\n") {
		if uri, ok := strings.CutPrefix(strings.TrimSpace(l), "uri: "); ok {
			names = append(names, path.Base(uri))
		}
	}
	sort.Strings(names)
	return names
}

// servedFiles records which archives were downloaded in full, so a
// validator that skipped an install cannot pass unnoticed.
type servedFiles struct {
	log io.Writer
	mu  sync.Mutex
	ok  map[string]bool
}

func (s *servedFiles) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		name := path.Base(r.URL.Path)
		fmt.Fprintf(s.log, "krew-manifest: served %s %s: %d, %d bytes\n", r.Method, name, rec.status, rec.bytes)
		if r.Method == http.MethodGet && rec.status == http.StatusOK {
			s.mu.Lock()
			if s.ok == nil {
				s.ok = map[string]bool{}
			}
			s.ok[name] = true
			s.mu.Unlock()
		}
	})
}

func (s *servedFiles) checkAll(names []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var notServed []string
	for _, n := range names {
		if !s.ok[n] {
			notServed = append(notServed, n)
		}
	}
	if len(names) == 0 {
		return errors.New("the manifest has no platform")
	}
	if len(notServed) > 0 {
		return fmt.Errorf("the validator passed without downloading %s", strings.Join(notServed, ", "))
	}
	return nil
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}
