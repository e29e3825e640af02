package service

import (
	"context"
	"time"

	"github.com/snapexec/snapexec/internal/exec"
)

// Attachment is one client attached to a process (the attach WebSocket, an
// event stream): its output from a seq on as it is produced, its stdin and
// terminal, and its ending. The process is looked up once, when the client
// attaches; each keystroke and each chunk of output then goes straight to
// and from it, and so does its end: whatever its id names once the table
// has forgotten it, the attachment stays with the process it attached to.
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
	return s.attach(p, rec, afterSeq)
}

// attach attaches to p's output after afterSeq.
func (s *Service) attach(p *exec.Process, rec record, afterSeq int64) (*Attachment, error) {
	feed, err := p.Follow(afterSeq)
	if err != nil {
		return nil, err
	}
	return &Attachment{limits: s.limits, p: p, rec: rec, feed: feed}, nil
}

// follow is the follower of p, which its caller just started, from its
// first output. A process it cannot follow, which no one would end, is
// ended.
func (s *Service) follow(p *exec.Process, rec record) (Follower, error) {
	a, err := s.attach(p, rec, 0)
	if err != nil {
		p.Terminate(exec.StatusTerminated)
		return nil, err
	}
	return a, nil
}

// Follower is what a client that only reads holds of a process (an
// Attachment, through Follow): its output, its ending and its end.
type Follower interface {
	Next(ctx context.Context, wait time.Duration) (exec.ReadResult, error)
	Info() ProcessInfo
	Result(ctx context.Context) (ExecOutput, error)
	Terminate() bool
	Close()
}

// Follow is Attach for a client that only reads (an event stream).
func (s *Service) Follow(id string, afterSeq int64) (Follower, error) {
	a, err := s.Attach(id, afterSeq)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// Result waits for the process's ending and returns it as Exec answers it,
// as Service.Result does, or ctx's error; it never ends the process itself.
func (a *Attachment) Result(ctx context.Context) (ExecOutput, error) {
	select {
	case <-a.p.Done():
	case <-ctx.Done():
		return ExecOutput{}, ctx.Err()
	}
	return ending(a.p, a.rec), nil
}

// Terminate ends the process's group, as Service.Terminate does, and
// reports whether it was still running.
func (a *Attachment) Terminate() bool { return a.p.Terminate(exec.StatusTerminated) }

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
