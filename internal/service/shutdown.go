package service

import (
	"context"
	"errors"
	"time"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// Shutdown is the server's one shutdown gate. In order: it stops admitting
// commands and prewarms (ShuttingDown turns true; they get
// exec.ErrShuttingDown); it answers every request waiting on a capture (a
// command that never ran ends with status shutdown, a waiting prewarm gets
// exec.ErrShuttingDown); it ends the captures; then it shuts the process
// manager down, which ends every running and held process group with status
// shutdown and waits for them until ctx ends.
func (s *Service) Shutdown(ctx context.Context) error {
	s.stop(exec.ErrShuttingDown)
	// After the gate: a waiter whose capture Close ends sees the gate closed.
	s.snapshots.Close()
	return s.procs.Shutdown(ctx)
}

// ShuttingDown reports whether Shutdown has begun.
func (s *Service) ShuttingDown() bool { return s.life.Err() != nil }

// admit refuses new work once Shutdown has begun.
func (s *Service) admit() error {
	if s.ShuttingDown() {
		return exec.ErrShuttingDown
	}
	return nil
}

// prepareSnapshot applies in's snapshot request to cmd, waiting for the
// capture at most until in.Timeout runs out, Shutdown begins or ctx ends:
// then the command never runs (NotRunError).
func (s *Service) prepareSnapshot(ctx context.Context, in ExecInput, cmd *shellsnap.Command) (shellsnap.Receipt, error) {
	if in.Snapshot == nil {
		return s.snapshots.Prepare(ctx, nil, cmd, shellsnap.Execution)
	}
	ctx, cancel := s.waitContext(ctx, in.Timeout)
	defer cancel()
	receipt, err := s.snapshots.Prepare(ctx, in.Snapshot, cmd, shellsnap.Execution)
	switch {
	case errors.Is(err, shellsnap.ErrWaitEnded):
		return receipt, notRun(err, receipt)
	case err == nil && s.ShuttingDown():
		// Shutdown began meanwhile, and may have ended this command's
		// capture (it closes the cache after the gate): the command is not
		// started.
		return receipt, notRun(exec.ErrShuttingDown, receipt)
	}
	return receipt, err
}

// waitContext is ctx, ended also by Shutdown (cause exec.ErrShuttingDown)
// and, when timeout is positive, once it has passed (cause
// ErrTimedOutWaiting).
func (s *Service) waitContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(s.life, func() { cancel(exec.ErrShuttingDown) })
	end := func() {
		unhook()
		cancel(nil)
	}
	if timeout <= 0 {
		return ctx, end
	}
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, timeout, ErrTimedOutWaiting)
	return ctx, func() {
		cancelTimeout()
		end()
	}
}
