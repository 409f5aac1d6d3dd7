package output

import (
	"errors"
	"io"
	"sync"
	"time"
)

// ErrBackedUp is what Detached.Write returns when the reader of the output
// has not taken what was written before: the text is not queued.
var ErrBackedUp = errors.New("the output is not being read")

// Detached writes to an io.Writer from a goroutine of its own, so that a
// reader that stops reading (a full pipe) never blocks the caller: the
// caller can stop printing, or wait for room while it watches its own
// deadline. It is the only goroutine that writes to the underlying writer.
type Detached struct {
	out   io.Writer
	limit int

	mu      sync.Mutex
	pending []byte
	// writing: the goroutine holds a chunk it is writing.
	writing bool
	err     error
	wake    chan struct{}
	room    chan struct{}
	// written closes and is replaced each time a chunk is written.
	written chan struct{}
}

// Detach starts the goroutine that writes to out. At most limit bytes wait
// unwritten, beyond the chunk being written; a longer text is queued only
// when nothing waits.
func Detach(out io.Writer, limit int) *Detached {
	d := &Detached{out: out, limit: limit, wake: make(chan struct{}, 1), room: make(chan struct{}, 1), written: make(chan struct{})}
	go d.loop()
	return d
}

// Write queues p. It never blocks on the reader: when more than the limit
// waits, it returns ErrBackedUp and queues nothing. An error of an earlier
// write (EPIPE) is returned by every later Write.
func (d *Detached) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return 0, d.err
	}
	if len(d.pending) > 0 && len(d.pending)+len(p) > d.limit {
		return 0, ErrBackedUp
	}
	d.pending = append(d.pending, p...)
	select {
	case d.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

// Room fires after a chunk has been written: a Write that was refused may
// succeed now.
func (d *Detached) Room() <-chan struct{} { return d.room }

// Drain waits until everything queued has been written, or until idle
// passes without a chunk being written (a reader that stopped reading), and
// returns the first error of a write. What is left then is dropped.
func (d *Detached) Drain(idle time.Duration) error {
	for {
		d.mu.Lock()
		done := len(d.pending) == 0 && !d.writing || d.err != nil
		err, written := d.err, d.written
		d.mu.Unlock()
		if done {
			return err
		}
		select {
		case <-written:
		case <-time.After(idle):
			return ErrBackedUp
		}
	}
}

// piece is the most the goroutine writes at once, so that Drain sees a
// slow reader make progress.
const piece = 64 << 10

func (d *Detached) loop() {
	for range d.wake {
		for d.writeOne() {
		}
	}
}

// writeOne writes the next piece of what is queued; it reports false when
// nothing is left or the output failed.
func (d *Detached) writeOne() bool {
	d.mu.Lock()
	chunk := d.pending[:min(len(d.pending), piece)]
	d.writing = len(chunk) > 0 && d.err == nil
	writing := d.writing
	d.mu.Unlock()
	if !writing {
		return false
	}
	_, err := d.out.Write(chunk)
	d.mu.Lock()
	d.writing = false
	d.pending = d.pending[len(chunk):]
	if len(d.pending) == 0 {
		d.pending = nil
	}
	if err != nil {
		d.err, d.pending = err, nil
	}
	close(d.written)
	d.written = make(chan struct{})
	d.mu.Unlock()
	select {
	case d.room <- struct{}{}:
	default:
	}
	return err == nil
}
