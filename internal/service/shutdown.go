package service

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

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
	err := s.procs.Shutdown(ctx)
	// After the processes: a session command's files outlive it.
	s.sessions.Close()
	return err
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

// launch is a command as the service spawns it: the client's, or with its
// snapshot replayed into it; and the snapshot's receipt.
type launch struct {
	argv    []string
	env     map[string]string
	receipt shellsnap.Receipt
	// replay is the replay's input when a snapshot was replayed: a standby
	// of the same launch can serve the command.
	replay *shellsnap.ReplayInput
}

// prepareSnapshot asks the cache for in's snapshot, waiting for the capture
// at most until in.Timeout runs out, Shutdown begins or ctx ends: then the
// command never runs (NotRunError). When the cache answers with a snapshot,
// it is replayed into l.
func (s *Service) prepareSnapshot(ctx context.Context, in ExecInput, l shellsnap.Launch) (launch, error) {
	out := launch{argv: l.Argv, env: l.Env}
	if in.Snapshot == nil {
		p, err := s.snapshots.Prepare(ctx, nil, l)
		out.receipt = p.Receipt
		return out, err
	}
	ctx, cancel := s.waitContext(ctx, in.Timeout)
	defer cancel()
	// A login terminal uses a snapshot of its own, an interactive login
	// shell's (docs/design/snapshots.md#login-terminals).
	terminal := in.TTY != nil && shellsnap.LoginTerminal(in.Snapshot.Shell, l.Argv)
	l.Terminal = terminal
	ctx, end := s.snapshotSpan(ctx, *in.Snapshot, shellsnap.Execution)
	p, err := s.snapshots.Prepare(ctx, in.Snapshot, l)
	if err == nil && p.Snapshot != nil {
		_, span := s.tracer.Start(ctx, "shellsnap.replay", trace.WithAttributes(attribute.Int("state_bytes", p.Snapshot.StateBytes)))
		replay := &shellsnap.ReplayInput{
			Snapshot:   p.Snapshot,
			Shell:      in.Snapshot.Shell.Name,
			Command:    out.argv,
			ShellStart: 0,
			Env:        l.Env,
		}
		if terminal {
			// No standby serves a terminal: replay stays nil. A snapshot
			// without a terminal's restore (none is, today) gives a real login
			// terminal, as a command's failed capture gives the command as
			// asked.
			var ok bool
			if out.argv, out.env, ok = shellsnap.ReplayInteractive(*replay); !ok {
				p.Receipt.Outcome, p.Receipt.Reason = shellsnap.OutcomeFallback, "the snapshot has no restore for a terminal"
			}
		} else {
			out.replay = replay
			out.argv, out.env = shellsnap.Replay(*replay)
		}
		span.End()
	}
	end(p.Receipt, err)
	out.receipt = p.Receipt
	switch {
	case errors.Is(err, shellsnap.ErrWaitEnded):
		return out, notRun(err, p.Receipt)
	case err == nil && s.ShuttingDown():
		// Shutdown began meanwhile, and may have ended this command's
		// capture (it closes the cache after the gate): the command is not
		// started.
		return out, notRun(exec.ErrShuttingDown, p.Receipt)
	}
	return out, err
}

// snapshotSpan starts the reference's span of a snapshot prepare, which the
// capture's span and the replay's are children of
// (docs/design/snapshots.md#telemetry); end records the receipt and ends it.
func (s *Service) snapshotSpan(ctx context.Context, req shellsnap.Request, purpose shellsnap.Purpose) (_ context.Context, end func(shellsnap.Receipt, error)) {
	ctx, span := s.tracer.Start(ctx, "codex.exec_server.process_prepare_shell_snapshot", trace.WithAttributes(
		attribute.String("shell", req.Shell.Name), attribute.String("purpose", purpose.String())))
	return ctx, func(r shellsnap.Receipt, err error) {
		span.SetAttributes(attribute.String("outcome", string(r.Outcome)), attribute.String("state", string(r.State)))
		if err != nil {
			span.SetStatus(codes.Error, "snapshot request refused")
		}
		span.End()
	}
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
