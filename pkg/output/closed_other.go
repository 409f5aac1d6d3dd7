//go:build !unix

package output

import (
	"context"
	"io"
)

// WatchClosed cannot poll a pipe here; the next write tells instead.
func WatchClosed(context.Context, io.Writer) <-chan struct{} { return nil }
