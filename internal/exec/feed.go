package exec

import (
	"context"
	"slices"
	"time"
)

// feedBytes bounds what a feed holds for its reader, counted as the ring
// counts its chunks (data plus chunkOverhead): past it the feed drops what it
// holds and reads the ring again, so that a reader that falls behind holds
// no more than this beyond the ring.
const feedBytes = 64 << 10

// Feed follows a process's output from a seq on, for one reader that stays
// (an attached terminal client): first what the ring retains after that seq,
// then each chunk as the reader goroutine appends it. A chunk is handed to
// the feed in the append itself, so a reader that keeps up takes it without
// reading the ring or the process table; one that falls more than feedBytes
// behind reads the ring again from its place, in seq order, so that it
// neither skips nor repeats a chunk the ring still holds. What the ring
// evicted before the reader took it is reported as ErrOutputLost, as Read
// reports it.
//
// The appender never waits for a feed. Next is for one goroutine at a time;
// Close ends the feed.
type Feed struct {
	p     *Process
	ready chan struct{} // holds a token once there is something to take

	// Guarded by the ring's mutex.
	next    int64   // seq of the next chunk Next returns
	pending []Chunk // the chunks from next on, unless behind
	bytes   int     // what pending holds, counted against feedBytes
	behind  bool    // pending is not kept: the chunks from next on are read from the ring
	closed  bool    // Close was called
}

// Follow returns a feed of the output after afterSeq; afterSeq 0 starts at
// the oldest retained chunk, whatever was evicted before it. It returns
// ErrSeqAhead when afterSeq is beyond the output produced so far, and
// ErrOutputLost when chunks after a positive afterSeq were evicted.
func (p *Process) Follow(afterSeq int64) (*Feed, error) {
	r := p.ring
	r.mu.Lock()
	defer r.mu.Unlock()
	afterSeq = max(afterSeq, 0)
	if afterSeq >= r.nextSeq {
		return nil, ErrSeqAhead
	}
	oldest := r.nextSeq - int64(len(r.buf)-r.start)
	switch {
	case afterSeq == 0:
		afterSeq = oldest - 1
	case afterSeq+1 < oldest:
		return nil, ErrOutputLost
	}
	// Behind from the start: the first Next reads what the ring retains.
	f := &Feed{p: p, ready: make(chan struct{}, 1), next: afterSeq + 1, behind: true}
	r.feeds = append(r.feeds, f)
	f.wake()
	return f, nil
}

// offerLocked hands f the chunk just appended; the ring's mutex is held.
func (f *Feed) offerLocked(c Chunk) {
	if !f.behind {
		if n := len(c.Data) + chunkOverhead; f.bytes+n <= feedBytes {
			f.pending = append(f.pending, c)
			f.bytes += n
		} else {
			f.pending, f.bytes, f.behind = nil, 0, true
		}
	}
	f.wake()
}

// wake leaves a token for Next, unless one waits there already.
func (f *Feed) wake() {
	select {
	case f.ready <- struct{}{}:
	default:
	}
}

// take returns what f has for its reader; lost when the ring evicted chunks
// it had not taken (next is then the oldest retained), closed when the
// output is complete and all taken.
func (f *Feed) take() (chunks []Chunk, next int64, lost, closed bool) {
	r := f.p.ring
	r.mu.Lock()
	defer r.mu.Unlock()
	if f.behind {
		if oldest := r.nextSeq - int64(len(r.buf)-r.start); f.next < oldest {
			f.next = oldest
			return nil, f.next, true, false
		}
		chunks, f.behind = r.readLocked(f.next-1, 0).chunks, false
	} else {
		chunks, f.pending, f.bytes = f.pending, nil, 0
	}
	if len(chunks) > 0 {
		f.next = chunks[len(chunks)-1].Seq + 1
	}
	return chunks, f.next, false, r.closed && f.next >= r.nextSeq
}

// Next returns the chunks after the last it returned (from the feed's start
// the first time), as Read does: at once when there are some or the output is
// complete (Closed), otherwise after waiting up to wait, or until ctx ends
// (ctx's error), for new output. It returns ErrOutputLost, with NextSeq the
// oldest retained seq, when the ring evicted chunks before the feed's reader
// took them; the next call goes on from there.
func (f *Feed) Next(ctx context.Context, wait time.Duration) (ReadResult, error) {
	w := &boundedWait{left: wait}
	defer w.stop()
	for {
		chunks, next, lost, closed := f.take()
		res := ReadResult{Chunks: chunks, NextSeq: next, Closed: closed}
		res.Exited, res.ExitCode = f.p.ending()
		if lost {
			return res, ErrOutputLost
		}
		if len(chunks) > 0 || closed || w.over() {
			return res, nil
		}
		if err := w.block(ctx, f.ready); err != nil {
			return res, err
		}
	}
}

// Close ends the feed: the ring stops handing it chunks.
func (f *Feed) Close() {
	r := f.p.ring
	r.mu.Lock()
	defer r.mu.Unlock()
	if f.closed {
		return
	}
	f.closed = true
	r.feeds = slices.DeleteFunc(r.feeds, func(g *Feed) bool { return g == f })
	f.pending, f.bytes = nil, 0
}
