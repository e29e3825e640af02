package exec

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// maxWriteIDs is how many write ids a process remembers, as the reference
// does (docs/design/processes.md#stdin).
const maxWriteIDs = 4096

// stdinPipe is the write end of a PipeStdin process's stdin.
type stdinPipe struct {
	// turn serializes writes; it is a channel so that waiting for it honours a
	// context. Whoever holds it may write to w.
	turn chan struct{}

	mu sync.Mutex // guards w and ids; never held while writing
	w  *os.File   // nil once closed
	// pipe is set for a pipe, whose write end reports that no reader is
	// left (a terminal's input has none to report).
	pipe bool
	// ids outlive the process, so that a retried write that closed stdin is
	// still acknowledged as a duplicate; they are counted in its footprint.
	ids *writeIDs
	// seed keys the hash of each write's data that its id remembers.
	seed maphash.Seed
}

func newStdinPipe(w *os.File, pipe bool) *stdinPipe {
	return &stdinPipe{turn: make(chan struct{}, 1), w: w, pipe: pipe, ids: newWriteIDs(maxWriteIDs), seed: maphash.MakeSeed()}
}

// file returns the open write end, or nil. A pipe whose every read end is
// closed (the child closed its stdin, or ended) is closed here, so that
// stdin shows closed as soon as nothing can read it, not only once a write
// fails.
func (s *stdinPipe) file() *os.File {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w != nil && s.pipe && pipeReadersGone(s.w) {
		_ = s.w.Close()
		s.w = nil
	}
	return s.w
}

// pipeReadersGone reports whether every read end of the pipe w writes is
// closed: poll reports POLLERR on the write end then.
func pipeReadersGone(w *os.File) bool {
	return polled(w, unix.POLLOUT, unix.POLLERR)
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

// record returns what was written under id; the zero record when nothing was.
func (s *stdinPipe) record(id string) stdinRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids.get(id)
}

// remember records what was written under id.
func (s *stdinPipe) remember(id string, rec stdinRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids.put(id, rec)
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

// StdinWrite is what one WriteStdin did.
type StdinWrite struct {
	// Written is the bytes of data this call wrote.
	Written int
	// AlreadyWritten is the bytes of data that earlier calls with the same
	// write id had written: this call wrote data[AlreadyWritten:] (Written of
	// them).
	AlreadyWritten int
	// Duplicate reports that earlier calls with the same write id had written
	// all of data, and closed stdin if this call asks to: this call did
	// nothing.
	Duplicate bool
}

// WriteStdin writes data to the process's stdin, then closes stdin when close
// is set. Writes are serialized; one that ctx ends returns what it wrote and
// ctx's error.
//
// A non-empty writeID makes the write idempotent over retries (the last 4096
// ids are remembered, even once stdin is closed or the process has ended): a
// call records how many bytes of data went into the pipe under its id, a
// write cut short included, and a retry with the same id and data writes only
// the bytes that are missing; one whose earlier call wrote everything is a
// Duplicate that writes nothing. A call whose id was used for other data is
// ErrWriteIDReused and writes nothing: which data the client meant cannot be
// known. A retry may add close: one whose earlier call wrote everything
// without closing closes stdin, and is no Duplicate.
//
// It returns ErrProcessExited when the process has exited, and
// ErrStdinClosed when it runs but its stdin is not open: it was not started
// with PipeStdin, a write closed it, or the child closed its end.
func (p *Process) WriteStdin(ctx context.Context, data []byte, writeID string, close bool) (StdinWrite, error) {
	s := p.stdin
	if s == nil {
		return StdinWrite{}, p.stdinGone(ErrStdinClosed, false)
	}
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return StdinWrite{}, ctx.Err()
	}
	defer func() { <-s.turn }()
	var w StdinWrite
	sum := s.sum(data)
	if writeID != "" {
		rec := s.record(writeID)
		if (rec.done || rec.written > 0) && rec.sum != sum {
			return StdinWrite{}, ErrWriteIDReused
		}
		if rec.done && (rec.closed || !close) {
			return StdinWrite{AlreadyWritten: rec.written, Duplicate: true}, nil
		}
		// A retry of a whole write that adds close goes on: it closes.
		w.AlreadyWritten = min(rec.written, len(data))
	}
	f := s.file()
	if f == nil {
		return w, p.stdinGone(ErrStdinClosed, false)
	}
	var err error
	if rest := data[w.AlreadyWritten:]; len(rest) > 0 {
		w.Written, err = writeContext(ctx, f, rest)
	}
	if err == nil && close {
		s.close()
	}
	if writeID != "" && (err == nil || w.Written > 0) {
		// A write cut short is remembered too: its retry must not write again
		// what went into the pipe.
		s.remember(writeID, stdinRecord{written: w.AlreadyWritten + w.Written, done: err == nil, closed: err == nil && close, sum: sum})
	}
	if errors.Is(err, ErrStdinClosed) {
		err = p.stdinGone(err, errors.Is(err, syscall.EPIPE))
	}
	return w, err
}

// stdinGone is the error for a write that found stdin closed (closed, an
// ErrStdinClosed): ErrProcessExited once the process has exited, closed while
// it runs. A child that exited is told apart from one that closed its stdin
// even before it is reaped, and, when its end broke the pipe (broken), even
// before the kernel reports the exit, which closes the child's files first:
// that is given exitWindow to show.
func (p *Process) stdinGone(closed error, broken bool) error {
	wait := time.Duration(0)
	if broken {
		wait = exitWindow
	}
	for deadline := time.Now().Add(wait); ; time.Sleep(time.Millisecond) {
		p.mu.Lock()
		exited := p.exited
		p.mu.Unlock()
		if exited || childExited(p.pid) {
			return ErrProcessExited
		}
		if time.Now().After(deadline) {
			return closed
		}
	}
}

// exitWindow is how long after a broken stdin a child's exit may take to be
// reported (its files are closed first): what a child that closes its stdin
// and runs on costs a write's answer, once.
const exitWindow = 20 * time.Millisecond

// childExited reports whether pid, a child of this process, has exited,
// reaped or not: waitid with WNOWAIT looks without reaping, which is the
// waiter's to do. A pid that is no child of ours any more was reaped.
func childExited(pid int) bool {
	if pid <= 0 {
		return false
	}
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	if errors.Is(err, unix.ECHILD) {
		return true
	}
	return err == nil && info.Signo != 0 // zero: no child of pid has changed state
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
	case errors.Is(err, syscall.EPIPE), errors.Is(err, os.ErrClosed), errors.Is(err, syscall.EIO):
		// EIO: a terminal whose every other end has closed.
		return n, fmt.Errorf("%w: %w", ErrStdinClosed, err)
	default:
		return n, err
	}
}

// stdinRecord is what was written under one write id.
type stdinRecord struct {
	written int    // bytes of the write's data in the pipe
	done    bool   // all of it, and stdin closed when the write asked
	closed  bool   // done, and stdin closed: a retry that adds close is done
	sum     uint64 // the write's data (stdinPipe.sum)
}

// sum identifies a write's data among the writes of one process, so that a
// retry of another is told apart: a hash, not the data, so that 4096
// remembered ids cost their ids and no more.
func (s *stdinPipe) sum(data []byte) uint64 {
	return maphash.Bytes(s.seed, data)
}

// writeIDs remembers what was written under the last max ids: a FIFO ring
// and a map.
type writeIDs struct {
	max   int
	order []string
	next  int // index in order of the oldest id once order is full
	recs  map[string]stdinRecord
	bytes int64 // the ids' length plus an overhead each, for the footprint
}

// writeIDOverhead is what a remembered id costs beyond its bytes: its slot in
// order and its map entry.
const writeIDOverhead = 64

func newWriteIDs(max int) *writeIDs {
	return &writeIDs{max: max, recs: make(map[string]stdinRecord)}
}

func (w *writeIDs) get(id string) stdinRecord {
	return w.recs[id]
}

// put records rec under id; a new id forgets the oldest once max are known.
func (w *writeIDs) put(id string, rec stdinRecord) {
	if _, ok := w.recs[id]; ok {
		w.recs[id] = rec
		return
	}
	if len(w.order) < w.max {
		w.order = append(w.order, id)
	} else {
		old := w.order[w.next]
		delete(w.recs, old)
		w.bytes -= int64(len(old)) + writeIDOverhead
		w.order[w.next] = id
		w.next = (w.next + 1) % w.max
	}
	w.recs[id] = rec
	w.bytes += int64(len(id)) + writeIDOverhead
}
