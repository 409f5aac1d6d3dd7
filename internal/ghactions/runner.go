// The runner's side: a Go model of how the GitHub Actions runner finds
// workflow commands in a step's output (actions/runner: ActionCommand's
// TryParseV2 and TryParse, and ActionCommandManager's stop-commands
// state), for tests that replay podsync's real output through it.
//
// Where the runner compares strings with culture rules (.NET StartsWith
// and IndexOf under ICU), characters such a comparison may ignore
// (format and control characters, variation selectors) are skipped here
// too, so the model finds at least every command the runner would.

package ghactions

import (
	"strings"
	"unicode"
)

// Command is one workflow command the runner parsed.
type Command struct {
	// Name is the command as written (the runner compares it without case).
	Name       string
	Properties map[string]string
	Data       string
	// Legacy: found by the ##[name]data syntax.
	Legacy bool
	// Line is the whole line the command came from.
	Line string
}

// Commands are the runner's commands: stop-commands and its extensions.
var Commands = []string{
	"stop-commands", "set-env", "set-output", "save-state", "add-mask", "add-path",
	"add-matcher", "remove-matcher", "debug", "warning", "error", "notice",
	"group", "endgroup", "echo",
}

// Lines splits output as the runner reads a step's output: .NET's
// StreamReader.ReadLine ends a line at \n, \r or \r\n.
func Lines(output string) []string {
	var out []string
	for len(output) > 0 {
		i := strings.IndexAny(output, "\r\n")
		if i < 0 {
			out = append(out, output)
			break
		}
		out = append(out, output[:i])
		if output[i] == '\r' && i+1 < len(output) && output[i+1] == '\n' {
			i++
		}
		output = output[i+1:]
	}
	return out
}

// visible is s without the runes Ignorable skips.
func visible(s string) string {
	return strings.Map(func(r rune) rune {
		if ignorable(r) {
			return -1
		}
		return r
	}, s)
}

// registered reports whether name is in names, without case.
func registered(names []string, name string) bool {
	for _, n := range names {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// ParseV2 is TryParseV2: the line, after leading white space, starts
// with ::, then NAME[ PROPS]::DATA.
func ParseV2(line string, names []string) (Command, bool) {
	msg := visible(strings.TrimLeftFunc(line, unicode.IsSpace))
	msg = strings.TrimLeftFunc(msg, unicode.IsSpace)
	if !strings.HasPrefix(msg, "::") {
		return Command{}, false
	}
	end := strings.Index(msg[2:], "::")
	if end < 0 {
		return Command{}, false
	}
	info := msg[2 : 2+end]
	name, props, _ := strings.Cut(info, " ")
	if !registered(names, name) {
		return Command{}, false
	}
	cmd := Command{Name: name, Properties: properties(strings.TrimSpace(props), ","), Data: msg[2+end+2:], Line: line}
	return cmd, true
}

// ParseLegacy is TryParse: ##[NAME[ PROPS]]DATA anywhere in the line; only
// the first ##[ counts.
func ParseLegacy(line string, names []string) (Command, bool) {
	msg := visible(line)
	start := strings.Index(msg, "##[")
	if start < 0 {
		return Command{}, false
	}
	rb := strings.IndexByte(msg[start:], ']')
	if rb < 0 {
		return Command{}, false
	}
	info := msg[start+3 : start+rb]
	name, props, _ := strings.Cut(info, " ")
	if !registered(names, name) {
		return Command{}, false
	}
	return Command{Name: name, Properties: properties(props, ";"), Data: msg[start+rb+1:], Legacy: true, Line: line}, true
}

func properties(s, sep string) map[string]string {
	out := map[string]string{}
	for _, p := range strings.Split(s, sep) {
		k, v, ok := strings.Cut(p, "=")
		if ok && k != "" && v != "" {
			out[k] = v
		}
	}
	return out
}

// Parse is what TryProcessCommand tries on a line: TryParseV2, then
// TryParse.
func Parse(line string, names []string) (Command, bool) {
	if c, ok := ParseV2(line, names); ok {
		return c, true
	}
	return ParseLegacy(line, names)
}

// Strict parses every line of output on its own, as if commands were
// never stopped: every command any line would run.
func Strict(output string) []Command {
	var out []Command
	for _, line := range Lines(output) {
		if c, ok := Parse(line, Commands); ok {
			out = append(out, c)
		}
	}
	return out
}

// Replay runs output through the runner's command state: after
// stop-commands TOKEN only ::TOKEN:: (or ##[TOKEN]) is processed, and it
// resumes. It returns the commands that ran, stop and resume included.
func Replay(output string) []Command {
	var out []Command
	names := append([]string(nil), Commands...)
	stopped, token := false, ""
	for _, line := range Lines(output) {
		c, ok := Parse(line, names)
		if !ok {
			continue
		}
		switch {
		case stopped && token != "" && strings.EqualFold(c.Name, token):
			// An empty token never resumes, as in the runner.
			names = names[:len(names)-1]
			stopped, token = false, ""
		case stopped:
			continue
		case strings.EqualFold(c.Name, "stop-commands"):
			stopped, token = true, c.Data
			names = append(names, token)
		}
		out = append(out, c)
	}
	return out
}
