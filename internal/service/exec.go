package service

import (
	"context"
	"errors"
	"maps"
	"time"

	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/sandbox"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// ExecInput is one command to run, as a client asked for it.
type ExecInput struct {
	// ProcessID is the client's key for the process; empty means generated.
	ProcessID string
	Argv      []string
	// Cwd is the working directory, absolute; nil means the server's.
	Cwd *string
	// Env is the request's env: without EnvPolicy exactly the child's
	// environment, with it laid over the policy's result.
	Env       map[string]string
	EnvPolicy *envpolicy.Policy
	// Snapshot asks for the scope's shell snapshot to be replayed.
	Snapshot *shellsnap.Request
	// Sandbox confines the command, its snapshot capture and every
	// descendant; nil means the server's default (Options.DefaultSandbox).
	Sandbox *sandbox.Policy
	Stdin   []byte
	// Timeout is the command's wall-clock limit; zero means the default of
	// what runs it (Limits.DefaultTimeout for a command, none for a
	// background process).
	Timeout time.Duration
	// IdleTimeout ends the command once it has written nothing this long;
	// zero means none.
	IdleTimeout time.Duration
	// MaxOutputBytes bounds the output kept per stream for the ending, as
	// exec.Spec's does.
	MaxOutputBytes int
	// TTY runs the command on a new terminal of this size (exec.Spec.TTY);
	// nil means none.
	TTY *exec.TTYSize
	// Arg0 is the argv[0] the program sees; empty means Argv[0].
	Arg0 string
}

// ExecOutput is a command's ending. ProcessID is empty and Pid zero when
// the command never ran (NotRunError).
type ExecOutput struct {
	ProcessID string
	Pid       int
	Result    exec.Result
	Snapshot  shellsnap.Receipt
	// Sandbox is how the process was confined; zero when it never ran.
	Sandbox sandbox.Report
}

// Exec runs in to completion. If ctx ends first, the process group is
// terminated and its ending is still returned. A command that never ran
// (NotRunError) is an ending too: its status, its receipt, no process. An
// input that Validate refuses is its error, and nothing runs.
func (s *Service) Exec(ctx context.Context, in ExecInput) (ExecOutput, error) {
	p, rec, err := s.start(ctx, StartInput{ExecInput: in}, s.limits.DefaultTimeout)
	var nr *NotRunError
	if errors.As(err, &nr) {
		return nr.Output(), nil
	}
	if err != nil {
		return ExecOutput{}, err
	}
	p.Wait(ctx) // a client that goes away takes its process group with it
	return ending(p, rec), nil
}

// StartExec starts in as Exec runs it (its defaults, its errors), without
// waiting, and returns the follower of its process from its first output
// (its id is Info's): for a caller that streams its output and takes its
// ending once the output is closed (Result). The follower holds the
// process itself: however soon it ends and the table forgets it, it is
// followed to its end. Such a caller terminates the process if it goes away,
// as Exec does, and closes the follower.
func (s *Service) StartExec(ctx context.Context, in ExecInput) (Follower, error) {
	p, rec, err := s.start(ctx, StartInput{ExecInput: in}, s.limits.DefaultTimeout)
	if err != nil {
		return nil, err
	}
	return s.follow(p, rec)
}

// ending is a process's ending as Exec answers it.
func ending(p *exec.Process, rec record) ExecOutput {
	return ExecOutput{ProcessID: p.ID(), Pid: p.Pid(), Result: p.Result(), Snapshot: rec.receipt, Sandbox: p.Info().Sandbox}
}

// prepare turns in into the spec to spawn: the child's environment, then the
// snapshot replay, which may rewrite argv and env and is returned with its
// input. A capture failure never fails the command; an invalid scope or an
// unsupported shell does, and a request that ends while its command waits
// for the capture is a NotRunError. The wait counts against in.Timeout: the
// process gets what remains of it.
func (s *Service) prepare(ctx context.Context, in ExecInput) (exec.Spec, shellsnap.Receipt, *shellsnap.ReplayInput, error) {
	confine, err := s.sandbox(in.Sandbox)
	if err != nil {
		return exec.Spec{}, shellsnap.Receipt{}, nil, err
	}
	l, err := s.prepareSnapshot(ctx, in, shellsnap.Launch{
		Argv:    in.Argv,
		Cwd:     orZero(in.Cwd),
		Env:     s.childEnv(in.Env, in.EnvPolicy),
		Policy:  in.EnvPolicy,
		Sandbox: confine,
	})
	receipt := l.receipt
	if err != nil {
		return exec.Spec{}, receipt, nil, err
	}
	timeout := in.Timeout
	if timeout > 0 {
		if timeout -= receipt.Wait; timeout <= 0 {
			return exec.Spec{}, receipt, nil, notRun(ErrTimedOutWaiting, receipt)
		}
	}
	return exec.Spec{
		Argv:           l.argv,
		Dir:            orZero(in.Cwd),
		Env:            envpolicy.List(l.env),
		Stdin:          in.Stdin,
		Timeout:        timeout,
		IdleTimeout:    in.IdleTimeout,
		MaxOutputBytes: in.MaxOutputBytes,
		Sandbox:        confine,
		TTY:            in.TTY,
		Arg0:           in.Arg0,
	}, receipt, l.replay, nil
}

// sandbox is the sandbox of a request that asked for p (nil: the server's
// default), refused before anything runs for it when the manager cannot
// enforce it (exec.Manager.CheckSandbox's errors).
func (s *Service) sandbox(p *sandbox.Policy) (sandbox.Policy, error) {
	confine := s.defaultSandbox
	if p != nil {
		confine = *p
	}
	return confine, s.procs.CheckSandbox(confine)
}

// childEnv is the environment of a child whose request gave env and policy
// (docs/design/envpolicy.md#snapshots): with a policy, the policy applied to the
// server's environment with the request's env laid over it; without one,
// exactly the request's env. Never-inherited names are dropped either way.
func (s *Service) childEnv(env map[string]string, policy *envpolicy.Policy) map[string]string {
	out := make(map[string]string, len(env))
	if policy != nil {
		out = envpolicy.Apply(*policy, s.serverEnv)
	}
	maps.Copy(out, env)
	envpolicy.DropNeverInherited(out)
	return out
}

// orZero is *p, or the zero value when p is nil.
func orZero[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
