package exec

import (
	"context"
	"time"
)

// ReadResult is one read of a process's retained output.
type ReadResult struct {
	// Chunks are the retained chunks after the asked-for seq, in seq order.
	Chunks []Chunk
	// NextSeq is the last returned chunk's seq plus one, or the process's next
	// seq when none was returned: the next read passes NextSeq-1 as afterSeq.
	// With ErrOutputLost it is the oldest retained seq, so that the same rule
	// resumes at the oldest chunk still there.
	NextSeq int64
	// Exited reports whether the process has exited; its group and output may
	// still be ending.
	Exited bool
	// ExitCode is the exit code once exited, nil when the process was ended by a
	// signal.
	ExitCode *int
	// Closed reports that the process and its group have ended, the output is
	// complete, and no chunk follows NextSeq: a reader that has seen this has
	// seen everything.
	Closed bool
}

// Read returns the retained output chunks with seq > afterSeq, as the
// reference's process/read does (docs/design/processes.md#reading-output);
// afterSeq 0 reads from the oldest retained chunk.
// A positive maxBytes bounds the returned data: at least one chunk is
// returned, and the read stops before a chunk that would exceed the budget
// or once the budget is reached. Read returns at once when there are chunks
// or the process has ended and its output is complete; otherwise it waits up
// to wait, or until ctx ends (which returns ctx's error), for new output.
// It returns ErrOutputLost when chunks after a positive afterSeq were
// evicted before they were read, and ErrSeqAhead when afterSeq is not below
// the next seq.
func (p *Process) Read(ctx context.Context, afterSeq int64, maxBytes int, wait time.Duration) (ReadResult, error) {
	w := &boundedWait{left: wait}
	defer w.stop()
	for {
		r := p.ring.read(afterSeq, maxBytes)
		res := ReadResult{Chunks: r.chunks, NextSeq: r.next, Closed: r.closed && r.atEnd}
		res.Exited, res.ExitCode = p.ending()
		// Checked first: a seq near the top of int64 also reads as lost.
		if afterSeq >= r.next {
			return res, ErrSeqAhead
		}
		if r.lost {
			return res, ErrOutputLost
		}
		if len(res.Chunks) > 0 || r.closed || w.over() {
			return res, nil
		}
		if err := w.block(ctx, r.changed); err != nil {
			return res, err
		}
	}
}

// ending is what p's table holds of its end: whether it exited, and its
// exit code once known.
func (p *Process) ending() (exited bool, code *int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exitCode != nil {
		c := *p.exitCode
		code = &c
	}
	return p.exited, code
}

// boundedWait is a loop's wait for more output: at most its first length in
// all, across the wake-ups that each end with another look.
type boundedWait struct {
	left  time.Duration // 0 once over: one last look, then the answer
	timer *time.Timer
}

// over reports whether the wait has ended, so that the loop answers.
func (w *boundedWait) over() bool { return w.left <= 0 }

// block waits for a wake-up on ready, the end of the wait (which makes it
// over), or ctx's end (its error).
func (w *boundedWait) block(ctx context.Context, ready <-chan struct{}) error {
	if w.timer == nil {
		w.timer = time.NewTimer(w.left)
	}
	select {
	case <-ready:
	case <-w.timer.C:
		w.left = 0
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// stop releases the timer.
func (w *boundedWait) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}
