// Command update-readme writes the table of podsync's own flags into
// README.md, between the flags:begin and flags:end comments, from the flags
// that cmd.NewCommand registers, so the README cannot drift from the command.
// With -verify it changes nothing and fails when README.md is out of date.
//
//	go run ./hack/update-readme [-verify] [-readme README.md]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/spf13/pflag"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/cmd"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "update-readme:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("update-readme", flag.ContinueOnError)
	readme := fs.String("readme", "README.md", "the file holding the markers")
	verify := fs.Bool("verify", false, "only check that the file is up to date")
	if err := fs.Parse(args); err != nil {
		return err
	}
	old, err := os.ReadFile(*readme)
	if err != nil {
		return fmt.Errorf("read the README: %w", err)
	}
	doc, err := replaceBetween(string(old), flagsBlock())
	if err != nil {
		return fmt.Errorf("%s: %w", *readme, err)
	}
	if doc == string(old) {
		return nil
	}
	if *verify {
		return fmt.Errorf("%s:%d: the flag table differs from the command's flags; run make readme", *readme, firstDiffLine(string(old), doc))
	}
	if err := os.WriteFile(*readme, []byte(doc), 0o644); err != nil {
		return fmt.Errorf("write the README: %w", err)
	}
	return nil
}

// flagsBlock is what goes between the markers: the table of the command's
// own flags as it registers them now, and a note on the others.
func flagsBlock() string {
	c := cmd.NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	return renderTable(flagRows(c.LocalFlags(), kubectlFlags())) + "\n" + kubectlNote + "\n"
}

// kubectlNote stands under the table in place of the flags left out of it.
const kubectlNote = "Every standard kubectl flag works too (`--kubeconfig`, `--context`, `-n`, `--as`, `--token`, " +
	"`--request-timeout`, `-v`, …); `kubectl podsync -h` lists them all."

// kubectlFlags names the flags that every kubectl command has: those of
// genericclioptions.ConfigFlags, asked of a fresh one so that a new kubectl
// flag is left out without an edit here, and klog's -v. They are documented by
// kubectl, and listing them would bury podsync's own.
func kubectlFlags() map[string]bool {
	fs := pflag.NewFlagSet("kubectl", pflag.ContinueOnError)
	genericclioptions.NewConfigFlags(true).WithDeprecatedPasswordFlag().AddFlags(fs)
	names := map[string]bool{"v": true}
	fs.VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
	return names
}
