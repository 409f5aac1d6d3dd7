// Command krew-manifest renders the krew-release-bot template (.krew.yaml)
// for archives built locally: each addURIAndSha gets the archive's real
// sha256, so the manifest can be validated and installed before a release.
//
//	go run ./hack/krew-manifest -dist dist -version v1.2.3 [-base-url http://127.0.0.1:8080] > plugins/podsync.yaml
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/template"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("krew-manifest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tmpl := fs.String("template", ".krew.yaml", "krew-release-bot template")
	dist := fs.String("dist", "dist", "folder with the release archives")
	version := fs.String("version", "", "release tag, starting with v")
	baseURL := fs.String("base-url", "", "serve the archives from here instead of the release URLs (for local validation)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	out, err := render(*tmpl, *dist, *version, *baseURL)
	if err != nil {
		fmt.Fprintln(stderr, "krew-manifest:", err)
		return 1
	}
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintln(stderr, "krew-manifest:", err)
		return 1
	}
	return 0
}

func render(tmplPath, dist, version, baseURL string) ([]byte, error) {
	if !strings.HasPrefix(version, "v") {
		return nil, fmt.Errorf("version %q must start with v", version)
	}
	text, err := os.ReadFile(tmplPath)
	if err != nil {
		return nil, fmt.Errorf("read template: %w", err)
	}
	funcs := template.FuncMap{"addURIAndSha": func(url, tag string) (string, error) {
		return uriAndSha(url, tag, dist, baseURL)
	}}
	t, err := template.New(filepath.Base(tmplPath)).Funcs(funcs).Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, struct{ TagName string }{version}); err != nil {
		return nil, fmt.Errorf("render template: %w", err)
	}
	return buf.Bytes(), nil
}

// uriAndSha does what the release bot's function does, with the sha256 of
// the local archive of the same name.
func uriAndSha(url, tag, dist, baseURL string) (string, error) {
	url = strings.ReplaceAll(url, "{{ .TagName }}", tag)
	name := path.Base(url)
	if baseURL != "" {
		url = strings.TrimSuffix(baseURL, "/") + "/" + name
	}
	sum, err := fileSHA256(filepath.Join(dist, name))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("uri: %s\n    sha256: %s", url, sum), nil
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("archive %s is missing: run make dist first", p)
	}
	if err != nil {
		return "", fmt.Errorf("open archive: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
