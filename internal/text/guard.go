package text

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/kubectl-podsync/kubectl-podsync/internal/ghactions"
)

// Bounds of what LineGuard lets through.
const (
	// GuardLineLen bounds one line, in characters.
	GuardLineLen = 1000
	// GuardTotal bounds all of it, in bytes.
	GuardTotal = 64 << 10
)

// LineGuard passes text that podsync does not control (what exec
// credential plugins write on stderr) to Out line by line: each line
// escaped for a terminal (Escape), cut to GuardLineLen characters, and,
// with GitHub, defused so that the runner reads no workflow command in
// it. Past GuardTotal bytes it writes one line saying that the rest was
// dropped, and nothing more. Safe for concurrent use.
type LineGuard struct {
	Out io.Writer
	// GitHub: the output is read by the GitHub Actions runner.
	GitHub bool
	// What names the writer in the line that says the rest was dropped.
	What string

	mu      sync.Mutex
	partial []byte
	// cr: the last line ended at \r, whose \n may come next.
	cr      bool
	written int
	dropped bool
}

// Write takes any bytes; whole lines are passed on at once, a partial
// line waits for its end or Flush.
func (g *LineGuard) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rest := p
	for len(rest) > 0 {
		if g.cr && rest[0] == '\n' {
			rest = rest[1:]
		}
		g.cr = false
		if len(rest) == 0 {
			break
		}
		i := bytes.IndexAny(rest, "\n\r")
		if i < 0 {
			g.partial = append(g.partial, rest...)
			// A line longer than any shown needs no more of it kept.
			if len(g.partial) > 4*GuardLineLen+utf8.UTFMax {
				g.partial = g.partial[:4*GuardLineLen+utf8.UTFMax]
			}
			break
		}
		g.partial = append(g.partial, rest[:i]...)
		g.emit()
		g.cr = rest[i] == '\r'
		rest = rest[i+1:]
	}
	return len(p), nil
}

// Flush passes on a partial line (a prompt waiting for its answer).
func (g *LineGuard) Flush() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.partial) > 0 {
		g.emit()
	}
}

// emit writes the partial line as one line, if the bound allows.
func (g *LineGuard) emit() {
	line := Escape(string(g.partial))
	g.partial = g.partial[:0]
	if g.dropped {
		return
	}
	if r := []rune(line); len(r) > GuardLineLen {
		line = string(r[:GuardLineLen-1]) + "…"
	}
	if g.GitHub {
		line = ghactions.Defuse(line)
	}
	line += "\n"
	if g.written+len(line) > GuardTotal {
		g.dropped = true
		line = fmt.Sprintf("podsync: %s wrote more than %d KiB; the rest is dropped\n", g.What, GuardTotal>>10)
	}
	g.written += len(line)
	_, _ = io.WriteString(g.Out, line)
}
