package output

import (
	"bytes"
	"fmt"
	"io"

	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kubectl-podsync/kubectl-podsync/internal/ghactions"
)

// Under GitHub Actions (Options.StopCommands set) no text from the cluster
// may run a workflow command, in either of the runner's syntaxes (see
// ghactions.Defuse), and what scripts parse must decode as it does elsewhere:
//
//   - tables and names: the text is defused (a backslash before the [ of
//     ##[ and before a line's leading ::);
//   - json: a [ after ## is written \u005b, the same string once decoded;
//   - yaml: a document with such text is written again with those strings
//     double-quoted (one line each, the [ as \u005b), the same values once
//     decoded;
//   - templates and custom columns, whose text is the user's: between
//     ::stop-commands::TOKEN and ::TOKEN:: lines, each on a line of its
//     own, so a template without a trailing newline never puts one
//     mid-line.
//
// No guard line is ever written into json or yaml.

// gitHub reports whether the writer runs under GitHub Actions.
func (w *Writer) gitHub() bool { return w.opts.StopCommands != "" }

// forGitHub makes text, ready for the output, safe for the runner.
func (w *Writer) forGitHub(out []byte) []byte {
	switch {
	case !w.gitHub():
		return out
	case w.shape == Table || w.shape == Name:
		return []byte(ghactions.Defuse(string(out)))
	case w.printsJSON():
		return ghactions.DefuseJSON(out)
	case w.shape == Event:
		// Each document was made safe as it was printed (safeYAML).
		return out
	}
	return w.guardLines(out)
}

// guardLines puts text between the stop-commands lines. The pause ends only
// where a line ends: text that ends mid-line leaves it open until a later
// text, or End, ends the line.
func (w *Writer) guardLines(text []byte) []byte {
	var b bytes.Buffer
	if !w.paused {
		b.WriteString(ghactions.StopLine(w.opts.StopCommands))
		w.paused = true
	}
	b.Write(text)
	if bytes.HasSuffix(text, []byte("\n")) {
		b.WriteString(ghactions.ResumeLine(w.opts.StopCommands))
		w.paused = false
	}
	return b.Bytes()
}

// End flushes the output and ends a stop-commands pause still open (a
// template without a trailing newline), on a line of its own, so the
// commands podsync writes next (its ::error annotations) run.
func (w *Writer) End() error {
	if err := w.Flush(); err != nil {
		return err
	}
	if !w.paused {
		return nil
	}
	w.paused = false
	if _, err := io.WriteString(w.opts.Out, "\n"+ghactions.ResumeLine(w.opts.StopCommands)); err != nil {
		return &WriteError{Err: err}
	}
	return nil
}

// safeYAML returns one YAML document of the printer as it is when no text
// in it can form a workflow command, else the same values written with
// every such string double-quoted: one line each, its [ after ## as
// \u005b. Should the emitter still give a risky line, the document is
// written as JSON, which is YAML too.
func safeYAML(doc []byte) ([]byte, error) {
	if !ghactions.Commandish(string(doc)) {
		return doc, nil
	}
	sep := []byte("---\n")
	body, hadSep := bytes.CutPrefix(doc, sep)
	var root yaml.Node
	if err := yaml.Unmarshal(body, &root); err != nil {
		return nil, fmt.Errorf("read the YAML printed: %w", err)
	}
	quoteRisky(&root)
	var out bytes.Buffer
	if hadSep {
		out.Write(sep)
	}
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	if err := enc.Encode(&root); err != nil {
		return nil, fmt.Errorf("write the YAML again: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("write the YAML again: %w", err)
	}
	safe := ghactions.DefuseJSON(out.Bytes())
	if !ghactions.Commandish(string(safe)) {
		return safe, nil
	}
	return yamlAsJSON(body, hadSep)
}

// quoteRisky double-quotes every string scalar, key or value, that could
// form a workflow command.
func quoteRisky(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && ghactions.Commandish(n.Value) {
		n.Style = yaml.DoubleQuotedStyle
	}
	for _, c := range n.Content {
		quoteRisky(c)
	}
}

func yamlAsJSON(body []byte, sep bool) ([]byte, error) {
	j, err := sigsyaml.YAMLToJSON(body)
	if err != nil {
		return nil, fmt.Errorf("write the YAML as JSON: %w", err)
	}
	out := append(ghactions.DefuseJSON(j), '\n')
	if sep {
		out = append([]byte("---\n"), out...)
	}
	return out, nil
}
