package service

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"runtime"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/sandbox"
	"github.com/snapexec/snapexec/internal/session"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// ErrSessionStart means a new session's first command, which takes the
// shell's first state, left none (its profile ended the shell, its cwd
// went): the session is not created.
var ErrSessionStart = errors.New("the session's shell left no state to start from")

// SessionInput creates a session (docs/design/sessions.md).
type SessionInput struct {
	// SessionID is the client's key; empty means generated.
	SessionID string
	Shell     shellsnap.Shell
	// Cwd is the first working directory, absolute; nil means the server's.
	Cwd       *string
	Env       map[string]string
	EnvPolicy *envpolicy.Policy
	// ScopeID, when not nil, starts the session from the scope's snapshot of
	// Shell, Cwd, Env and EnvPolicy (an empty or too long one is
	// shellsnap.ErrInvalidScope, as a command's is); nil starts it from a
	// bare shell.
	ScopeID *string
	// Sandbox confines every command of the session and the capture of its
	// first state; nil means the server's default (Options.DefaultSandbox).
	Sandbox *sandbox.Policy
}

// SessionExecInput is one command of a session.
type SessionExecInput struct {
	Script         string
	Stdin          []byte
	Timeout        time.Duration
	IdleTimeout    time.Duration
	MaxOutputBytes int
}

// SessionExecOutput is a session command's ending, as Exec answers it, and
// what it did to the session.
type SessionExecOutput struct {
	ExecOutput
	Session session.Outcome
}

// Validate reports the first field of in that l refuses, as ExecInput's
// Validate does.
func (in SessionInput) Validate(l Limits) error {
	if !shellsnap.SessionShell(in.Shell.Name) {
		return shellsnap.ErrSessionShell
	}
	if in.Shell.Path == "" || strings.IndexByte(in.Shell.Path, 0) >= 0 {
		return fieldErrorf("shell.path", "shell.path must be a path without NUL bytes")
	}
	if in.Sandbox != nil && len(in.Sandbox.WritableRoots) >= sandbox.MaxWritableRoots {
		// One root is the session's own: where each command leaves its state.
		return fieldErrorf("sandbox.writableRoots", "a session's sandbox takes at most %d roots", sandbox.MaxWritableRoots-1)
	}
	return l.checkLaunch(in.Cwd, in.Env, in.EnvPolicy)
}

// Validate reports the first field of in that l refuses.
func (in SessionExecInput) Validate(l Limits) error {
	if strings.IndexByte(in.Script, 0) >= 0 {
		return fieldErrorf("script", "script contains a NUL byte, which no shell can receive")
	}
	if l.MaxArgBytes > 0 && len(in.Script) > l.MaxArgBytes {
		return fieldErrorf("script", "script is %d bytes; the limit is %d", len(in.Script), l.MaxArgBytes)
	}
	if len(in.Script) > shellsnap.MaxSessionScript {
		return fieldErrorf("script", "script is %d bytes; a session's is at most %d (Linux's limit on one argument, less the line its command adds)", len(in.Script), shellsnap.MaxSessionScript)
	}
	if err := l.checkStdin("stdin", len(in.Stdin)); err != nil {
		return err
	}
	if err := l.checkTimeout("idleTimeoutMs", in.IdleTimeout); err != nil {
		return err
	}
	if l.MaxOutputBytes > 0 && in.MaxOutputBytes > l.MaxOutputBytes {
		return fieldErrorf("maxOutputBytes", "maxOutputBytes must be at most %d", l.MaxOutputBytes)
	}
	return l.checkTimeout("timeoutMs", in.Timeout)
}

// CreateSession creates a session and takes its first state: the scope's
// snapshot replayed (a capture failure falls back to a bare shell, as a
// command's does), or a bare shell's. An id in use is session.ErrExists,
// one too many session.ErrTooMany.
func (s *Service) CreateSession(ctx context.Context, in SessionInput) (session.Info, error) {
	if err := in.Validate(s.limits); err != nil {
		return session.Info{}, err
	}
	if err := s.admit(); err != nil {
		return session.Info{}, err
	}
	confine, err := s.sandbox(in.Sandbox)
	if err != nil {
		return session.Info{}, err
	}
	if err := exec.CheckDir(orZero(in.Cwd)); err != nil {
		return session.Info{}, err
	}
	if in.SessionID == "" {
		in.SessionID = "s-" + rand.Text()
	}
	env := s.childEnv(in.Env, in.EnvPolicy)
	if _, posix := env["POSIXLY_CORRECT"]; posix && in.Shell.Name == "bash" {
		return session.Info{}, fieldErrorf("env", "POSIXLY_CORRECT would start each command's bash in posix mode, which runs no BASH_ENV, where the session's state comes in; turn posix mode on in a command (set -o posix), which the session keeps")
	}
	var snap *shellsnap.Snapshot
	if in.ScopeID != nil {
		req := shellsnap.Request{ScopeID: *in.ScopeID, Shell: in.Shell}
		l, err := s.prepareSnapshot(ctx, ExecInput{Argv: []string{in.Shell.Path, "-lc", ":"}, Snapshot: &req, Env: in.Env, Timeout: s.limits.DefaultTimeout, Sandbox: &confine},
			shellsnap.Launch{Argv: []string{in.Shell.Path, "-lc", ":"}, Cwd: orZero(in.Cwd), Env: env, Policy: in.EnvPolicy, Sandbox: confine})
		if err != nil {
			var nr *NotRunError
			if errors.As(err, &nr) {
				return session.Info{}, nr.Unwrap()
			}
			return session.Info{}, err
		}
		if l.replay != nil {
			snap = l.replay.Snapshot
		}
	}
	lease, err := s.sessions.Create(in.SessionID, session.Config{Shell: in.Shell, Env: env, Cwd: orZero(in.Cwd), Sandbox: confine}, snap)
	if err != nil {
		return session.Info{}, err
	}
	out, err := s.runSession(ctx, lease, SessionExecInput{Script: ":"}, false)
	if errors.Is(err, exec.ErrSpawn) {
		// The request's shell.path, which it has no argv to name.
		err = &ProgramError{Field: "shell.path", Err: err}
	}
	if err != nil {
		return session.Info{}, err
	}
	if !out.Session.StateKept {
		return session.Info{}, ErrSessionStart
	}
	return s.sessions.Get(in.SessionID)
}

// SessionExec runs in in session id's state, to completion, and makes its
// end state the session's: session.ErrNotFound, session.ErrBusy while
// another command of the session runs. A command that ended by itself, with
// any status, hands its state on; one that was ended (timeout, signal, its
// client gone) leaves the session as it was, and the outcome says so.
func (s *Service) SessionExec(ctx context.Context, id string, in SessionExecInput) (SessionExecOutput, error) {
	run, err := s.beginSession(ctx, id, in)
	if err != nil {
		return SessionExecOutput{}, err
	}
	run.p.Wait(ctx) // a client that goes away takes its process group with it
	<-run.done
	return run.out, nil
}

// StartSessionExec starts in as SessionExec runs it, without waiting, and
// returns the follower of its process from its first output, as StartExec
// does: for a caller that streams its output and takes its ending with
// result once the output is closed. The session takes the command's end
// state when it ends, whoever waits for it; a caller that goes away
// terminates the process, which leaves the session as it was.
func (s *Service) StartSessionExec(ctx context.Context, id string, in SessionExecInput) (Follower, func(context.Context) (SessionExecOutput, error), error) {
	run, err := s.beginSession(ctx, id, in)
	if err != nil {
		return nil, nil, err
	}
	f, err := s.follow(run.p, run.rec)
	if err != nil {
		return nil, nil, err
	}
	result := func(ctx context.Context) (SessionExecOutput, error) {
		select {
		case <-run.done:
			return run.out, nil
		case <-ctx.Done():
			return SessionExecOutput{}, ctx.Err()
		}
	}
	return f, result, nil
}

// beginSession validates in and starts it in session id.
func (s *Service) beginSession(ctx context.Context, id string, in SessionExecInput) (*sessionRun, error) {
	if err := in.Validate(s.limits); err != nil {
		return nil, err
	}
	if err := s.admit(); err != nil {
		return nil, err
	}
	lease, err := s.sessions.Begin(id)
	if err != nil {
		return nil, err
	}
	return s.startSession(ctx, lease, in, true)
}

// sessionRun is a session command started: done is closed once it ended
// and its lease was given back, with out its ending.
type sessionRun struct {
	p    *exec.Process
	rec  record
	done chan struct{}
	out  SessionExecOutput
}

// runSession runs in under lease to its end.
func (s *Service) runSession(ctx context.Context, lease *session.Lease, in SessionExecInput, listed bool) (SessionExecOutput, error) {
	run, err := s.startSession(ctx, lease, in, listed)
	if err != nil {
		return SessionExecOutput{}, err
	}
	run.p.Wait(ctx)
	<-run.done
	return run.out, nil
}

// startSession starts in under lease, which is given back when it ends: a
// listed process (in the process table, as /exec's are), or for a session's
// first command an unlisted one.
func (s *Service) startSession(ctx context.Context, lease *session.Lease, in SessionExecInput, listed bool) (*sessionRun, error) {
	if in.Timeout == 0 {
		in.Timeout = s.limits.DefaultTimeout
	}
	if listed {
		if p, err := s.releaseSessionStandby(ctx, lease, in); p != nil || err != nil {
			if err != nil {
				lease.Abort()
				return nil, err
			}
			return s.followSession(ctx, lease, in, p, listed, true), nil
		}
	}
	cmd, err := lease.Command(in.Script)
	if err != nil {
		lease.Abort()
		return nil, err
	}
	spec := exec.Spec{
		Argv: cmd.Argv, Dir: startDir(lease.Cwd()), Env: envpolicy.List(cmd.Env), Stdin: in.Stdin,
		Timeout: in.Timeout, IdleTimeout: in.IdleTimeout, MaxOutputBytes: in.MaxOutputBytes,
		// The shell writes its end state in cmd.Dir, its own.
		Sandbox: lease.Sandbox().WithWritable(cmd.Dir),
	}
	var p *exec.Process
	if listed {
		p, _, err = s.spawn(ctx, spec, nil)
	} else {
		p, err = s.procs.Spawn(spec)
	}
	if err != nil {
		lease.Abort()
		return nil, err
	}
	return s.followSession(ctx, lease, in, p, listed, false), nil
}

// followSession follows p, in's process under lease (in a standby shell
// when standby is set): its ending ends the lease and, off the answer's
// path, gets the session a standby shell for its next command.
func (s *Service) followSession(ctx context.Context, lease *session.Lease, in SessionExecInput, p *exec.Process, listed, standby bool) *sessionRun {
	run := &sessionRun{p: p, done: make(chan struct{})}
	run.rec = record{argv: []string{lease.Shell().Path, "-lc", in.Script}, receipt: shellsnap.Receipt{Outcome: shellsnap.OutcomeNotRequested, Standby: standby}}
	if listed {
		s.remember(p, run.rec)
		_, life := s.tracer.Start(ctx, "process", trace.WithAttributes(attribute.String("session.id", lease.ID()), attribute.Bool("process.standby", standby)))
		s.pm.track(p, life)
	}
	go func() {
		<-p.Done()
		run.out = SessionExecOutput{ExecOutput: ending(p, run.rec)}
		run.out.Session = lease.End(in.Script, p.ID(), run.out.Result)
		if !listed {
			run.out.ProcessID = ""
		}
		close(run.done)
		// What is left is done in turn, by this one goroutine, so that it
		// takes at most one CPU from the answer on its way out, and after
		// the answer's goroutine has run: closing done readied it on this
		// goroutine's P, where it would wait until this one blocks.
		runtime.Gosched()
		lease.Settle()
		s.holdSessionStandby(lease.ID())
	}()
	return run
}

// startDir is the directory a session command whose state is in cwd starts
// in: the root when the state's directory is gone.
func startDir(cwd string) string {
	if exec.CheckDir(cwd) != nil {
		return "/"
	}
	return cwd
}

// releaseSessionStandby runs in in the standby shell that waits for the
// lease's state, when there is one, in is one it runs exactly
// (session.Lease.StandbyServes) and asks nothing its spawn fixed (stdin,
// an output bound), and its directory is still the one it started in. It
// returns no process and no error when in is to start fresh.
func (s *Service) releaseSessionStandby(ctx context.Context, lease *session.Lease, in SessionExecInput) (*exec.Process, error) {
	if len(in.Stdin) > 0 || in.MaxOutputBytes != 0 || !lease.StandbyServes(in.Script) {
		return nil, nil
	}
	sb := lease.Standby()
	if sb == nil {
		return nil, nil
	}
	if now, err := os.Stat(startDir(lease.Cwd())); sb.Dir == nil || err != nil || !os.SameFile(now, sb.Dir) {
		// Removed or replaced: a fresh start finds out what is there now.
		sb.Discard()
		return nil, nil
	}
	_, span := s.tracer.Start(ctx, "process.spawn", trace.WithAttributes(attribute.Bool("process.standby", true)))
	defer span.End()
	argv, goAhead := sb.Cmd.GoAhead(in.Script)
	p, err := sb.Held.Release(exec.Spec{Argv: argv, Timeout: in.Timeout, IdleTimeout: in.IdleTimeout}, goAhead)
	if err != nil {
		sb.Discard()
		if errors.Is(err, exec.ErrNotHeld) {
			return nil, nil // it died meanwhile: the command starts fresh
		}
		span.RecordError(err)
		return nil, err // the table's answer, as a fresh start would give it
	}
	return p, nil
}

// holdSessionStandby gets session id a standby shell for its next command
// (docs/design/sessions.md#standby-shells), when it may have one and has
// none: a shell held under the session's sandbox that restores its current
// state, given to the session once restored.
func (s *Service) holdSessionStandby(id string) {
	cmd, cfg, cwd, ok := s.sessions.StandbyCommand(id)
	if !ok {
		return
	}
	dir := startDir(cwd)
	info, err := os.Stat(dir)
	if err != nil {
		cmd.Close()
		return
	}
	h, err := s.standbys.Hold(exec.Spec{Argv: cmd.Argv, Dir: dir, Env: envpolicy.List(cmd.Env), Sandbox: cfg.Sandbox.WithWritable(cmd.Dir)})
	if err != nil {
		cmd.Close()
		return
	}
	if sb := (&session.Standby{Held: h, Cmd: cmd, Dir: info}); !s.sessions.Keep(id, sb) {
		sb.Discard()
	}
}

// Sessions returns the sessions, oldest first.
func (s *Service) Sessions() []session.Info { return s.sessions.List() }

// Session returns one session, or session.ErrNotFound.
func (s *Service) Session(id string) (session.Info, error) { return s.sessions.Get(id) }

// DeleteSession ends a session, or is session.ErrNotFound.
func (s *Service) DeleteSession(id string) error { return s.sessions.Delete(id) }

// ForkSession adds session newID (generated when empty) starting from id's
// current state.
func (s *Service) ForkSession(id, forkID string) (session.Info, error) {
	if err := s.admit(); err != nil {
		return session.Info{}, err
	}
	if forkID == "" {
		forkID = "s-" + rand.Text()
	}
	return s.sessions.Fork(id, forkID)
}

// SessionStats returns the session table's totals.
func (s *Service) SessionStats() session.Stats { return s.sessions.Stats() }
