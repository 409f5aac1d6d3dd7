package harness

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// StartHeld starts `kubectl podsync ARGS` like Start, but nobody reads its
// stdout until release is called. Once the pipe's buffer (64 KiB on Linux)
// is full, the plugin's next write blocks, and with it the worker whose
// message is being printed: a test can then pile up changes that the
// controller must fold. The test's cleanup releases the stream itself.
func (e *Env) StartHeld(t testing.TB, args ...string) (s *Stream, release func()) {
	t.Helper()
	hold := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(hold) }) }
	s = e.start(t, nil, hold, args)
	// Cleanups run last-in first-out: this one lets the reader go before
	// start's cleanup waits for it to finish.
	t.Cleanup(release)
	return s, release
}

// WaitWriteBlocked waits until the plugin has started writing to a held
// stdout: bytes wait in the pipe. A message larger than the pipe's buffer
// then blocks the plugin until the stream is released.
func (s *Stream) WaitWriteBlocked(limit time.Duration) {
	s.t.Helper()
	f, ok := s.pipe.(*os.File)
	if !ok {
		s.t.Fatalf("stdout is not a pipe")
	}
	var n int
	var err error
	Eventually(s.t, limit, func() string { return fmt.Sprintf("bytes in the stdout pipe (%d, %v); %s", n, err, s.Dump()) },
		func() bool {
			n, err = pipeBuffered(f)
			return err == nil && n > 0
		})
}
