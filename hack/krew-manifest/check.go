package main

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/template"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// The krew index's reviewers ask for more than validate-krew-manifest
// checks; these are the rules of theirs a machine can apply.
const (
	maxShortDescription = 50
	maxDescriptionWidth = 80
)

// manifest is the part of a krew Plugin the index rules look at.
type manifest struct {
	Spec struct {
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Platforms        []struct {
			URI string `json:"uri"`
		} `json:"platforms"`
	} `json:"spec"`
}

// checkFiles applies the index rules to each file: a krew-release-bot
// template (it holds template actions) or a rendered manifest. With dist
// set, every archive a rendered manifest names is read from there and must
// hold a license file.
func checkFiles(files []string, dist string, stdout io.Writer) error {
	var problems []string
	for _, f := range files {
		ps, err := checkFile(f, dist)
		if err != nil {
			return err
		}
		for _, p := range ps {
			problems = append(problems, f+": "+p)
		}
		if len(ps) == 0 {
			fmt.Fprintf(stdout, "krew-manifest: %s follows the index rules\n", f)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("the krew index would not accept:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

func checkFile(file, dist string) ([]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	isTemplate := strings.Contains(string(data), "{{")
	if isTemplate {
		data, err = renderStub(file, data)
		if err != nil {
			return nil, err
		}
	}
	var m manifest
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("parse %s: %w", file, err)
	}
	problems := textProblems(m)
	if isTemplate || dist == "" {
		return problems, nil
	}
	if len(m.Spec.Platforms) == 0 {
		problems = append(problems, "no platform to check for a license file")
	}
	for _, p := range m.Spec.Platforms {
		archive := filepath.Join(dist, path.Base(p.URI))
		ok, err := hasLicense(archive)
		if err != nil {
			return nil, err
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("archive %s holds no LICENSE file", path.Base(p.URI)))
		}
	}
	return problems, nil
}

// renderStub renders a template as krew-release-bot would, with stand-ins
// for the uri and sha256 of each archive, so it parses as YAML.
func renderStub(file string, data []byte) ([]byte, error) {
	funcs := template.FuncMap{"addURIAndSha": func(url, tag string) string {
		url = strings.ReplaceAll(url, "{{ .TagName }}", tag)
		return fmt.Sprintf("uri: %s\n    sha256: %s", url, strings.Repeat("0", 64))
	}}
	t, err := template.New(filepath.Base(file)).Funcs(funcs).Parse(string(data))
	if err != nil {
		return nil, fmt.Errorf("parse template %s: %w", file, err)
	}
	var b strings.Builder
	if err := t.Execute(&b, struct{ TagName string }{"v0.0.0"}); err != nil {
		return nil, fmt.Errorf("render template %s: %w", file, err)
	}
	return []byte(b.String()), nil
}

// textProblems: a short description of at most 50 characters on one line,
// a description wrapped at 80 columns that holds no usage example (the
// index wants those in the plugin's own help or homepage).
func textProblems(m manifest) []string {
	var problems []string
	short := m.Spec.ShortDescription
	switch {
	case short == "":
		problems = append(problems, "spec.shortDescription is empty")
	case strings.Contains(short, "\n"):
		problems = append(problems, "spec.shortDescription spans several lines")
	case utf8.RuneCountInString(short) > maxShortDescription:
		problems = append(problems, fmt.Sprintf("spec.shortDescription is %d characters, at most %d: %q",
			utf8.RuneCountInString(short), maxShortDescription, short))
	}
	if strings.TrimSpace(m.Spec.Description) == "" {
		return append(problems, "spec.description is empty")
	}
	for i, line := range strings.Split(strings.TrimRight(m.Spec.Description, "\n"), "\n") {
		if n := utf8.RuneCountInString(line); n > maxDescriptionWidth {
			problems = append(problems, fmt.Sprintf("spec.description line %d is %d columns, at most %d: %q", i+1, n, maxDescriptionWidth, line))
		}
		if isExample(line) {
			problems = append(problems, fmt.Sprintf("spec.description line %d is a usage example: %q", i+1, line))
		}
	}
	return problems
}

// isExample tells a usage example from prose: a shell prompt, or a line
// indented within the description, as command lines are set off from the
// text around them.
func isExample(line string) bool {
	return strings.HasPrefix(line, "$ ") || (strings.TrimSpace(line) != "" && strings.TrimLeft(line, " \t") != line)
}

// hasLicense reports whether a .tar.gz archive (the only kind dist.sh
// builds) holds a file named LICENSE, in any folder, with or without an
// extension, as the index requires of every archive.
func hasLicense(archive string) (bool, error) {
	f, err := os.Open(archive)
	if errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("archive %s is missing: run make dist first: %w", archive, err)
	}
	if err != nil {
		return false, fmt.Errorf("open archive: %w", err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", archive, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("read %s: %w", archive, err)
		}
		if h.Typeflag == tar.TypeReg && isLicense(h.Name) {
			return true, nil
		}
	}
}

func isLicense(name string) bool {
	base := path.Base(name)
	return base == "LICENSE" || strings.HasPrefix(base, "LICENSE.")
}
