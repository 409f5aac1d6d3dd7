package check

import (
	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
)

// The text helpers are package text's, which the printers use without
// the checks; these names keep them at hand for the checks and their
// callers.

// Escape is text.Escape: cluster text made safe for a terminal.
func Escape(s string) string { return text.Escape(s) }

// ControlChar is text.ControlChar.
func ControlChar(r rune) bool { return text.ControlChar(r) }

// SafeLine is text.SafeLine: OneLine, then Escape.
func SafeLine(s string, limit int) string { return text.SafeLine(s, limit) }

// OneLine is text.OneLine: whitespace folded, cut to limit runes.
func OneLine(s string, limit int) string { return text.OneLine(s, limit) }

// LogLine is text.LogLine: one log line safe for a terminal.
func LogLine(line string) string { return text.LogLine(line) }

// Defuse is text.Defuse: text unable to form a workflow command.
func Defuse(s string) string { return text.Defuse(s) }

// DefuseJSON is text.DefuseJSON.
func DefuseJSON(b []byte) []byte { return text.DefuseJSON(b) }

// Commandish is text.Commandish.
func Commandish(s string) bool { return text.Commandish(s) }

// DefusedWriter is text.DefusedWriter: a writer through Defuse.
type DefusedWriter = text.DefusedWriter
