package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// maxWriteIDs is how many write ids a process remembers, as the reference does.
const maxWriteIDs = 4096

// stdinPipe is the write end of a PipeStdin process's stdin.
type stdinPipe struct {
	// turn serializes writes; it is a channel so that waiting for it honours a
	// context. Whoever holds it may write to w.
	turn chan struct{}

	mu sync.Mutex // guards w and ids; never held while writing
	w  *os.File   // nil once closed
	// ids outlive the process, so that a retried write that closed stdin is
	// still acknowledged as a duplicate; they are counted in its footprint.
	ids *writeIDs
}

func newStdinPipe(w *os.File) *stdinPipe {
	return &stdinPipe{turn: make(chan struct{}, 1), w: w, ids: newWriteIDs(maxWriteIDs)}
}

// file returns the open write end, or nil.
func (s *stdinPipe) file() *os.File {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w
}

// close closes the write end unless it is closed; a write in progress fails.
func (s *stdinPipe) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w != nil {
		_ = s.w.Close()
		s.w = nil
	}
}

// footprint is what the remembered write ids cost.
func (s *stdinPipe) footprint() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids.bytes
}

// seen reports whether id was written; add remembers it.
func (s *stdinPipe) seen(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids.has(id)
}

func (s *stdinPipe) add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids.add(id)
}

// writeInitial writes the spec's stdin bytes before any WriteStdin; the caller
// holds the turn, which it gives back when done.
func (s *stdinPipe) writeInitial(data []byte) {
	defer func() { <-s.turn }()
	if w := s.file(); w != nil {
		// Not bounded by a context: a child that never reads holds it until it
		// ends, and ending closes w. Later writes wait their turn with theirs.
		_, _ = w.Write(data)
	}
}

// WriteStdin writes data to the process's stdin, then closes stdin when close
// is set. A non-empty writeID that was written before (one of the last 4096),
// even once stdin is closed or the process has ended, is acknowledged with
// duplicate set and nothing written; an id is remembered only once its whole
// write succeeded, so a failed write can be retried under the same id. Writes
// are serialized; one that ctx ends returns how much was written and ctx's
// error. It returns ErrStdinClosed when the process was not started with
// PipeStdin, stdin was closed, the child closed its end, or the process has
// ended.
func (p *Process) WriteStdin(ctx context.Context, data []byte, writeID string, close bool) (written int, duplicate bool, err error) {
	s := p.stdin
	if s == nil {
		return 0, false, ErrStdinClosed
	}
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return 0, false, ctx.Err()
	}
	defer func() { <-s.turn }()
	if writeID != "" && s.seen(writeID) {
		return 0, true, nil
	}
	w := s.file()
	if w == nil {
		return 0, false, ErrStdinClosed
	}
	if len(data) > 0 {
		written, err = writeContext(ctx, w, data)
		if err != nil {
			return written, false, err
		}
	}
	if close {
		s.close()
	}
	if writeID != "" {
		s.add(writeID)
	}
	return written, false, nil
}

// writeContext writes data to the pipe w until done or until ctx ends: a write
// deadline in the past unblocks a write to a child that does not read.
func writeContext(ctx context.Context, w *os.File, data []byte) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := w.SetWriteDeadline(time.Time{}); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrStdinClosed, err)
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = w.SetWriteDeadline(time.Unix(1, 0))
		close(fired)
	})
	n, err := w.Write(data)
	if !stop() {
		<-fired // the next write must not see this deadline
	}
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil:
		return n, ctx.Err()
	case errors.Is(err, syscall.EPIPE), errors.Is(err, os.ErrClosed):
		return n, fmt.Errorf("%w: %w", ErrStdinClosed, err)
	default:
		return n, err
	}
}

// writeIDs remembers the last max ids: a FIFO ring and a set.
type writeIDs struct {
	max   int
	order []string
	next  int // index in order of the oldest id once order is full
	set   map[string]struct{}
	bytes int64 // the ids' length plus an overhead each, for the footprint
}

// writeIDOverhead is what a remembered id costs beyond its bytes: its slot in
// order and its map entry.
const writeIDOverhead = 64

func newWriteIDs(max int) *writeIDs {
	return &writeIDs{max: max, set: make(map[string]struct{})}
}

func (w *writeIDs) has(id string) bool {
	_, ok := w.set[id]
	return ok
}

func (w *writeIDs) add(id string) {
	if w.has(id) {
		return
	}
	if len(w.order) < w.max {
		w.order = append(w.order, id)
	} else {
		old := w.order[w.next]
		delete(w.set, old)
		w.bytes -= int64(len(old)) + writeIDOverhead
		w.order[w.next] = id
		w.next = (w.next + 1) % w.max
	}
	w.set[id] = struct{}{}
	w.bytes += int64(len(id)) + writeIDOverhead
}
