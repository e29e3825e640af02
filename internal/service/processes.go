package service

import (
	"context"
	"errors"
	"slices"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// StartInput is a background process to start: an ExecInput plus whether
// stdin stays open for writes.
type StartInput struct {
	ExecInput
	PipeStdin bool
}

// ProcessInfo is a process as the service shows it: exec's account of it,
// with the argv its client gave (not the wrapper a snapshot replay runs) and
// the receipt of its snapshot request.
type ProcessInfo struct {
	exec.Info
	Snapshot shellsnap.Receipt
}

// ReadInput asks for a process's retained output (exec.Process.Read).
type ReadInput struct {
	// AfterSeq reads the chunks after this seq; 0 from the first retained.
	AfterSeq int64
	// MaxBytes bounds the chunk data returned (at least one chunk); zero
	// means no bound.
	MaxBytes int
	// Wait is how long to wait for output when there is none yet.
	Wait time.Duration
}

// StdinInput is one write to a process's stdin (exec.Process.WriteStdin).
type StdinInput struct {
	Data []byte
	// WriteID makes the write idempotent over retries; empty means none.
	WriteID string
	// Close closes stdin after the write.
	Close bool
}

// StdinOutput is what a write did, and whether stdin is closed now.
type StdinOutput struct {
	exec.StdinWrite
	Closed bool
}

// stdinWriteBound is Limits.StdinWriteBound's default.
const stdinWriteBound = 30 * time.Second

// record is what the service keeps of a process beside exec's table.
type record struct {
	argv    []string // the client's
	receipt shellsnap.Receipt
}

// Start prepares in as Exec does (environment, snapshot replay) and starts
// it in the process table without waiting, in a standby shell when one
// waits for its launch. Without a Timeout it runs until it ends or is ended.
// A command that never ran is a NotRunError; after Shutdown began, Start
// returns exec.ErrShuttingDown.
func (s *Service) Start(ctx context.Context, in StartInput) (ProcessInfo, error) {
	p, rec, err := s.start(ctx, in, 0)
	if err != nil {
		return ProcessInfo{}, err
	}
	return info(p, rec), nil
}

// start validates and starts in, with timeout def when it gives none, and
// keeps its record.
func (s *Service) start(ctx context.Context, in StartInput, def time.Duration) (*exec.Process, record, error) {
	if err := in.Validate(s.limits); err != nil {
		return nil, record{}, err
	}
	if err := s.admit(); err != nil {
		return nil, record{}, err
	}
	if in.Timeout == 0 {
		in.Timeout = def
	}
	spec, receipt, replayed, err := s.prepare(ctx, in.ExecInput)
	if err != nil {
		return nil, record{}, err
	}
	spec.ID, spec.PipeStdin = in.ProcessID, in.PipeStdin
	p, standby, err := s.spawn(ctx, spec, replayed)
	if err != nil {
		return nil, record{}, err
	}
	receipt.Standby = standby
	rec := record{argv: slices.Clone(in.Argv), receipt: receipt}
	s.remember(p, rec)
	// The life span outlives the request that started it; it is parented
	// under the request all the same.
	_, life := s.tracer.Start(ctx, "process", trace.WithAttributes(
		attribute.Bool("process.pipe_stdin", in.PipeStdin),
		attribute.String("snapshot.outcome", string(receipt.Outcome)),
	))
	s.pm.track(p, life)
	return p, rec, nil
}

// spawn starts spec, replayed from in, in the standby shell that waits for
// its launch or in a new process, and reports whether a standby ran it.
func (s *Service) spawn(ctx context.Context, spec exec.Spec, in *shellsnap.ReplayInput) (*exec.Process, bool, error) {
	_, span := s.tracer.Start(ctx, "process.spawn")
	defer span.End()
	p, standby, err := s.standbys.Start(ctx, spec, in)
	span.SetAttributes(attribute.Bool("process.standby", standby))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "spawn failed")
	}
	return p, standby, err
}

// List returns the running and retained processes, oldest first.
func (s *Service) List() []ProcessInfo {
	procs := s.procs.List()
	recs := make([]record, len(procs))
	kept := procs[:0]
	s.mu.Lock()
	for _, p := range procs {
		if rec, ok := s.records[p]; ok {
			recs[len(kept)] = rec
			kept = append(kept, p)
		}
	}
	s.mu.Unlock()
	out := make([]ProcessInfo, len(kept))
	for i, p := range kept {
		out[i] = info(p, recs[i])
	}
	return out
}

// Get returns one process, or ErrNotFound.
func (s *Service) Get(id string) (ProcessInfo, error) {
	p, rec, err := s.lookup(id)
	if err != nil {
		return ProcessInfo{}, err
	}
	return info(p, rec), nil
}

// Read returns a process's retained output after in.AfterSeq, waiting up to
// in.Wait for some (exec.Process.Read, and its errors), or ErrNotFound.
func (s *Service) Read(ctx context.Context, id string, in ReadInput) (exec.ReadResult, error) {
	p, _, err := s.lookup(id)
	if err != nil {
		return exec.ReadResult{}, err
	}
	return p.Read(ctx, in.AfterSeq, in.MaxBytes, in.Wait)
}

// WriteStdin writes in to a process's stdin (exec.Process.WriteStdin, and
// its errors), waiting at most Limits.StdinWriteBound for the child to read, and
// reports whether stdin is closed now. An input that Validate refuses is its
// error; an unknown process is ErrNotFound.
func (s *Service) WriteStdin(ctx context.Context, id string, in StdinInput) (StdinOutput, error) {
	if err := in.Validate(s.limits); err != nil {
		return StdinOutput{}, err
	}
	p, _, err := s.lookup(id)
	if err != nil {
		return StdinOutput{}, err
	}
	if in.Close && p.Info().TTY != nil {
		// Closing a terminal's input would leave its program waiting on a
		// terminal nobody can type into, and never at an end of input.
		return StdinOutput{}, &FieldError{Field: "close", Reason: "a terminal's stdin stays open, as a terminal's does: end the input as a keyboard does, with the byte 0x04 (Ctrl-D) at the start of a line"}
	}
	bound := s.limits.StdinWriteBound
	if bound <= 0 {
		bound = stdinWriteBound
	}
	bounded, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	w, err := p.WriteStdin(bounded, in.Data, in.WriteID, in.Close)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		// The server's bound, not the client's: the child did not read.
		return StdinOutput{}, &StdinNotReadError{StdinWrite: w, Bound: bound}
	}
	if err != nil {
		return StdinOutput{}, err
	}
	return StdinOutput{StdinWrite: w, Closed: !p.Info().StdinOpen}, nil
}

// Terminate ends a process's group (SIGTERM, grace, SIGKILL) and reports
// whether it was still running.
func (s *Service) Terminate(id string) (bool, error) {
	p, _, err := s.lookup(id)
	if err != nil {
		return false, err
	}
	return p.Terminate(exec.StatusTerminated), nil
}

// Resize sets the size of a process's terminal, whose foreground group gets
// SIGWINCH (exec.Process.Resize, and its errors: exec.ErrNotATTY,
// exec.ErrProcessExited), or ErrNotFound. A size outside 1..MaxTTYCells is
// a *FieldError.
func (s *Service) Resize(id string, size exec.TTYSize) error {
	if err := checkTTY("tty", &size); err != nil {
		return err
	}
	p, _, err := s.lookup(id)
	if err != nil {
		return err
	}
	return p.Resize(size)
}

// Signal sends sig to a process's whole group (a terminal's foreground
// group) and reports whether it was still running to get it.
func (s *Service) Signal(id string, sig syscall.Signal) (bool, error) {
	p, _, err := s.lookup(id)
	if err != nil {
		return false, err
	}
	return p.Signal(sig), nil
}

// info is what the service shows of p.
func info(p *exec.Process, rec record) ProcessInfo {
	in := p.Info()
	in.Argv = slices.Clone(rec.argv)
	return ProcessInfo{Info: in, Snapshot: rec.receipt}
}

// lookup returns the process id names and its record, or ErrNotFound. A
// process whose Start has not returned yet has no record, and is not found.
func (s *Service) lookup(id string) (*exec.Process, record, error) {
	p, ok := s.procs.Get(id)
	if !ok {
		return nil, record{}, ErrNotFound
	}
	s.mu.Lock()
	rec, ok := s.records[p]
	s.mu.Unlock()
	if !ok {
		return nil, record{}, ErrNotFound
	}
	return p, rec, nil
}

// remember keeps p's record until the table forgets p. A process that ended
// and was forgotten before its record was kept (the retained bounds can drop
// it at once) gets none.
func (s *Service) remember(p *exec.Process, rec record) {
	s.mu.Lock()
	s.records[p] = rec
	s.mu.Unlock()
	select {
	case <-p.Done():
	default:
		return // running: not forgotten before it ends
	}
	// forget runs under the table's lock: once the table is seen without p,
	// forget has run, and may have run before the record was kept.
	if q, ok := s.procs.Get(p.ID()); !ok || q != p {
		s.forget(p)
	}
}

// forget drops the record of a process the table forgot (exec.Manager.OnForget).
func (s *Service) forget(p *exec.Process) {
	s.mu.Lock()
	delete(s.records, p)
	s.mu.Unlock()
}
