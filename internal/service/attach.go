package service

import (
	"context"
	"time"

	"github.com/snapexec/snapexec/internal/exec"
)

// Attachment is one client attached to a process (the attach WebSocket): its
// output from a seq on as it is produced, and its stdin and terminal. The
// process is looked up once, when the client attaches; each keystroke and
// each chunk of output then goes straight to and from it.
type Attachment struct {
	limits Limits
	p      *exec.Process
	rec    record
	feed   *exec.Feed
}

// Attach attaches to a process's output after afterSeq (0: from the oldest
// retained chunk). It returns ErrNotFound for an unknown process,
// exec.ErrSeqAhead for a seq beyond the output produced so far, and
// exec.ErrOutputLost when chunks after a positive afterSeq were evicted.
// Close the attachment when the client goes.
func (s *Service) Attach(id string, afterSeq int64) (*Attachment, error) {
	p, rec, err := s.lookup(id)
	if err != nil {
		return nil, err
	}
	feed, err := p.Follow(afterSeq)
	if err != nil {
		return nil, err
	}
	return &Attachment{limits: s.limits, p: p, rec: rec, feed: feed}, nil
}

// Next returns the output after what Next last returned, waiting up to wait
// for some (exec.Feed.Next, and its errors).
func (a *Attachment) Next(ctx context.Context, wait time.Duration) (exec.ReadResult, error) {
	return a.feed.Next(ctx, wait)
}

// WriteStdin writes all of data to the process's stdin, waiting for the
// child to read as long as ctx lasts (the connection): a terminal that does
// not read holds its keyboard back, and a write cut short by a bound would
// lose the rest of what was typed (Service.WriteStdin's bound is a
// request's).
func (a *Attachment) WriteStdin(ctx context.Context, data []byte) error {
	in := StdinInput{Data: data}
	if err := in.Validate(a.limits); err != nil {
		return err
	}
	_, err := a.p.WriteStdin(ctx, in.Data, "", false)
	return err
}

// Resize sets the size of the process's terminal, as Service.Resize does.
func (a *Attachment) Resize(size exec.TTYSize) error {
	if err := checkTTY("tty", &size); err != nil {
		return err
	}
	return a.p.Resize(size)
}

// Info is the process as Service.Get shows it.
func (a *Attachment) Info() ProcessInfo {
	return info(a.p, a.rec)
}

// Close detaches.
func (a *Attachment) Close() {
	a.feed.Close()
}
