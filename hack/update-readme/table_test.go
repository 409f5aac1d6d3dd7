package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func testFlags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.Int("workers", 1, "Workers taking keys.")
	fs.StringP("selector", "l", "", "Label `SELECTOR`, e.g. a|b.")
	fs.Bool("watch-only", false, "No SYNC\n  lines.")
	fs.Duration("resync", 0, "Resync period.")
	fs.StringSlice("label-columns", nil, "Labels as <columns>.")
	fs.String("kubeconfig", "", "Path to the kubeconfig.")
	fs.String("hidden", "", "Not shown.")
	_ = fs.MarkHidden("hidden")
	fs.String("old", "", "Gone soon.")
	_ = fs.MarkDeprecated("old", "use --new")
	fs.String("color", "auto", "Colour.")
	fs.Lookup("color").NoOptDefVal = "always"
	return fs
}

func TestRenderTable(t *testing.T) {
	got := renderTable(flagRows(testFlags(), map[string]bool{"kubeconfig": true}))
	want := "| flag | meaning | default |\n" +
		"|---|---|---|\n" +
		"| `--color string[=always]` | Colour. | `auto` |\n" +
		"| `--label-columns strings` | Labels as &lt;columns>. |  |\n" +
		"| `--resync duration` | Resync period. | `0s` |\n" +
		"| `-l, --selector SELECTOR` | Label SELECTOR, e.g. a\\|b. |  |\n" +
		"| `--watch-only` | No SYNC lines. | `false` |\n" +
		"| `--workers int` | Workers taking keys. | `1` |\n"
	if got != want {
		t.Errorf("renderTable:\n%s\nwant:\n%s", got, want)
	}
}

func TestCodeSpan(t *testing.T) {
	for in, want := range map[string]string{
		"5":      "`5`",
		"a`b":    "`` a`b ``",
		"x|y":    "`x\\|y`",
		"[a, b]": "`[a, b]`",
	} {
		if got := codeSpan(in); got != want {
			t.Errorf("codeSpan(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReplaceBetween(t *testing.T) {
	doc := "# T\n\n" + beginMarker + "\nold\ntable\n" + endMarker + "\n\nafter\n"
	got, err := replaceBetween(doc, "new\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# T\n\n" + beginMarker + "\nnew\n" + endMarker + "\n\nafter\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	again, err := replaceBetween(got, "new\n")
	if err != nil || again != got {
		t.Errorf("a second run changed the document: %q, %v", again, err)
	}
}

func TestReplaceBetweenBadMarkers(t *testing.T) {
	for name, doc := range map[string]string{
		"no markers":   "# T\n",
		"no begin":     "a\n" + endMarker + "\n",
		"no end":       beginMarker + "\na\n",
		"end first":    endMarker + "\n" + beginMarker + "\n",
		"two begins":   beginMarker + beginMarker + endMarker,
		"two ends":     beginMarker + endMarker + endMarker,
		"only the end": endMarker,
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := replaceBetween(doc, "x\n"); err == nil {
				t.Errorf("no error; got %q", got)
			}
		})
	}
}

func TestFirstDiffLine(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"a\nb\nc", "a\nx\nc", 2},
		{"a\nb", "a\nb\nc", 3},
		{"x", "y", 1},
	} {
		if got := firstDiffLine(c.a, c.b); got != c.want {
			t.Errorf("firstDiffLine(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// The block for the real command lists podsync's flags and none of
// kubectl's, so a change in how the command registers them cannot leave the
// table empty or full of kubectl's flags unnoticed.
func TestFlagsBlock(t *testing.T) {
	skip := kubectlFlags()
	for _, name := range []string{"kubeconfig", "context", "namespace", "token", "request-timeout", "v"} {
		if !skip[name] {
			t.Errorf("kubectl flag --%s is not left out", name)
		}
	}
	block := flagsBlock()
	if rows := strings.Count(block, "\n| `-"); rows < 5 {
		t.Errorf("%d flag rows, want podsync's flags:\n%s", rows, block)
	}
	for _, kubectl := range []string{"--kubeconfig ", "-n, --namespace ", "--token ", "-v, --v "} {
		if strings.Contains(block, "\n| `"+kubectl) {
			t.Errorf("kubectl flag %s in the table:\n%s", kubectl, block)
		}
	}
}
