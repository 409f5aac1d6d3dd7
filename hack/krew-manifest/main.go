// Command krew-manifest renders the krew-release-bot template (.krew.yaml)
// for archives built locally by hack/dist.sh: each addURIAndSha gets the
// archive's real sha256, so the manifest can be installed and validated
// before a release. `make dist` writes dist/podsync.yaml with it;
// plugins/podsync.yaml is the one rendered for the release submitted to
// krew-index by hand.
//
//	go run ./hack/krew-manifest -dist dist -version v1.2.3 > dist/podsync.yaml
//	go run ./hack/krew-manifest -dist DIR -version v1.2.3 -partial > podsync.yaml   # only the platforms built
//	go run ./hack/krew-manifest -dist dist -validate -committed plugins/podsync.yaml
//	go run ./hack/krew-manifest -check .krew.yaml                      # the index rules on a template
//	go run ./hack/krew-manifest -check -dist dist dist/podsync.yaml    # and a LICENSE in every archive
//
// -check applies the krew index's rules that validate-krew-manifest does
// not: a shortDescription of at most 50 characters, a description wrapped
// at 80 columns without usage examples, and (with -dist, for a rendered
// manifest) a LICENSE file in every archive. It fails naming each problem.
//
// -validate serves the archives on loopback HTTP, renders a copy of the
// manifest whose uris point there, and runs krew's validate-krew-manifest on
// it in full mode, which installs every platform with `kubectl krew install`
// (validate-krew-manifest, kubectl and kubectl-krew must be on PATH).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	template, dist, version, baseURL, committed string
	partial, validate, check                    bool
}

// run returns the exit code: 0 done, 1 failed, 2 bad usage.
func run(args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("krew-manifest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.template, "template", ".krew.yaml", "krew-release-bot template")
	fs.StringVar(&o.dist, "dist", "dist", "folder with the release archives")
	fs.StringVar(&o.version, "version", "", "release tag, starting with v (default: spec.version of -committed)")
	fs.StringVar(&o.baseURL, "base-url", "", "serve the archives from here instead of the release URLs")
	fs.BoolVar(&o.partial, "partial", false, "leave out the platforms whose archive is not in -dist (for local tests)")
	fs.BoolVar(&o.validate, "validate", false, "validate the rendered manifest with validate-krew-manifest in full mode, serving -dist on loopback")
	fs.StringVar(&o.committed, "committed", "", "with -validate: fail unless this file is exactly the manifest rendered for -dist")
	fs.BoolVar(&o.check, "check", false, "apply the index rules to the manifests or templates given as arguments")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if o.check {
		return runCheck(fs, o, stdout, stderr)
	}
	if fs.NArg() > 0 || (o.version == "" && o.committed == "") {
		fmt.Fprintln(stderr, "krew-manifest: -version is required (or -committed to take it from) and no arguments are accepted")
		return 2
	}
	if err := o.do(stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "krew-manifest:", err)
		return 1
	}
	return 0
}

func runCheck(fs *flag.FlagSet, o options, stdout, stderr io.Writer) int {
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "krew-manifest: -check needs the manifests to check as arguments")
		return 2
	}
	dist := ""
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "dist" {
			dist = o.dist
		}
	})
	if err := checkFiles(fs.Args(), dist, stdout); err != nil {
		fmt.Fprintln(stderr, "krew-manifest:", err)
		return 1
	}
	return 0
}

func (o options) do(stdout, stderr io.Writer) error {
	if o.version == "" {
		v, err := committedVersion(o.committed)
		if err != nil {
			return err
		}
		o.version = v
	}
	if o.validate {
		return validate(o, stdout, stderr)
	}
	return renderTo(o, stdout)
}

func renderTo(o options, stdout io.Writer) error {
	out, err := render(o.template, o.dist, o.version, o.baseURL, o.partial)
	if err != nil {
		return err
	}
	if _, err := stdout.Write(out); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	return nil
}

var specVersion = regexp.MustCompile(`(?m)^  version: (\S+)$`)

// committedVersion reads spec.version, so a check after make dist uses the
// version the archives were built with even if git describe moved since.
func committedVersion(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read committed manifest: %w", err)
	}
	m := specVersion.FindSubmatch(data)
	if m == nil {
		return "", fmt.Errorf("%s has no spec.version", path)
	}
	return string(m[1]), nil
}
