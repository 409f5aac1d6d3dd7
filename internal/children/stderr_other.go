//go:build !linux

package children

import (
	"io"
	"os"
	"time"
)

// Stderr is nil where the children's stderr is not routed.
type Stderr struct{}

// RouteStderr routes nothing where it is not supported: children write to
// os.Stderr.
func RouteStderr() (*os.File, *Stderr) { return os.Stderr, nil }

// Copy does nothing.
func (s *Stderr) Copy(io.Writer, func()) {}

// Drain does nothing.
func (s *Stderr) Drain(time.Duration, func()) {}
