package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/template"
)

// header tells a reader of a rendered manifest where it comes from.
const header = "# Rendered from .krew.yaml by hack/krew-manifest with the sha256 of the archives\n" +
	"# of one `make dist` (docs/releases.md). Edit .krew.yaml, not this file.\n"

// missing stands for the sha256 of an archive that was not built; -partial
// leaves out the platforms that carry it.
const missing = "archive-not-built"

func render(tmplPath, dist, version, baseURL string, partial bool) ([]byte, error) {
	if !strings.HasPrefix(version, "v") {
		return nil, fmt.Errorf("version %q must start with v", version)
	}
	text, err := os.ReadFile(tmplPath)
	if err != nil {
		return nil, fmt.Errorf("read template: %w", err)
	}
	funcs := template.FuncMap{"addURIAndSha": func(url, tag string) (string, error) {
		return uriAndSha(url, tag, dist, baseURL, partial)
	}}
	t, err := template.New(filepath.Base(tmplPath)).Funcs(funcs).Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	var buf bytes.Buffer
	buf.WriteString(header)
	if err := t.Execute(&buf, struct{ TagName string }{version}); err != nil {
		return nil, fmt.Errorf("render template: %w", err)
	}
	if !partial {
		return buf.Bytes(), nil
	}
	return dropMissing(buf.String())
}

// uriAndSha does what the release bot's function does, with the sha256 of
// the local archive of the same name; the bot too assumes four spaces.
func uriAndSha(url, tag, dist, baseURL string, partial bool) (string, error) {
	url = strings.ReplaceAll(url, "{{ .TagName }}", tag)
	name := path.Base(url)
	if baseURL != "" {
		url = strings.TrimSuffix(baseURL, "/") + "/" + name
	}
	sum, err := fileSHA256(filepath.Join(dist, name))
	if partial && errors.Is(err, os.ErrNotExist) {
		sum = missing
	} else if err != nil {
		return "", err
	}
	return fmt.Sprintf("uri: %s\n    sha256: %s", url, sum), nil
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("archive %s is missing: run make dist first: %w", p, err)
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

// dropMissing removes the items of spec.platforms whose archive was not
// built. It works on the text so the rest of the manifest keeps its layout.
func dropMissing(manifest string) ([]byte, error) {
	lines := strings.SplitAfter(manifest, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == "platforms:" {
			start = i + 1
			break
		}
	}
	if start < 0 || start >= len(lines) {
		return nil, errors.New("template has no spec.platforms list")
	}
	itemIndent := indent(lines[start])
	var out, item []string
	kept := 0
	flush := func() {
		if len(item) > 0 && !strings.Contains(strings.Join(item, ""), missing) {
			out = append(out, item...)
			kept++
		}
		item = nil
	}
	out = append(out, lines[:start]...)
	i := start
list:
	for ; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.TrimSpace(l) == "":
			item = append(item, l)
		case indent(l) == itemIndent && strings.HasPrefix(strings.TrimSpace(l), "- "):
			flush()
			item = append(item, l)
		case indent(l) < itemIndent:
			break list
		default:
			item = append(item, l)
		}
	}
	flush()
	out = append(out, lines[i:]...)
	rendered := strings.Join(out, "")
	if kept == 0 {
		return nil, errors.New("no archive of any platform is in the dist folder")
	}
	if strings.Contains(rendered, missing) {
		return nil, errors.New("could not leave out a platform whose archive is missing: unexpected template layout")
	}
	return []byte(rendered), nil
}

func indent(line string) int {
	return len(line) - len(strings.TrimLeft(line, " "))
}
