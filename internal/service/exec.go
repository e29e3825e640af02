package service

import (
	"context"
	"errors"
	"maps"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	nooptrace "go.opentelemetry.io/otel/trace/noop"

	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/shellsnap"
	"github.com/snapexec/snapexec/internal/shellsnap/standby"
)

// ExecInput is one command to run, as a client asked for it.
type ExecInput struct {
	// ProcessID is the client's key for the process; empty means generated.
	ProcessID string
	Argv      []string
	Cwd       string
	// Env is the request's env: without EnvPolicy exactly the child's
	// environment, with it laid over the policy's result.
	Env       map[string]string
	EnvPolicy *envpolicy.Policy
	// Snapshot asks for the scope's shell snapshot to be replayed.
	Snapshot       *shellsnap.Request
	Stdin          []byte
	Timeout        time.Duration
	IdleTimeout    time.Duration
	MaxOutputBytes int
}

// ExecOutput is a command's ending. ProcessID is empty and Pid zero when
// the command never ran (NotRunError).
type ExecOutput struct {
	ProcessID string
	Pid       int
	Result    exec.Result
	Snapshot  shellsnap.Receipt
}

// Service runs commands.
type Service struct {
	procs     *exec.Manager
	snapshots *shellsnap.Cache
	serverEnv map[string]string
	standbys  *standby.Pool
	pm        *processMetrics
	tracer    trace.Tracer
	startedAt time.Time
	// life ends when Shutdown begins, with exec.ErrShuttingDown as its cause.
	life context.Context
	stop context.CancelCauseFunc
}

// Options is what a Service is built from.
type Options struct {
	// Procs runs the processes; Snapshots replays shell snapshots.
	Procs     *exec.Manager
	Snapshots *shellsnap.Cache
	// ServerEnv is the server's own environment (NAME=VALUE pairs), which an
	// envPolicy inherits from.
	ServerEnv []string
	// Standby bounds the standby shells of warm snapshot commands; its
	// Meter is Meter.
	Standby standby.Options
	// Meter records the process metrics and Tracer the process spans; nil
	// records nothing.
	Meter  metric.Meter
	Tracer trace.Tracer
}

// New returns a Service built from opts.
func New(opts Options) (*Service, error) {
	pm, err := newProcessMetrics(opts.Meter, opts.Procs)
	if err != nil {
		return nil, err
	}
	sbOpts := opts.Standby
	sbOpts.Meter = opts.Meter
	sb, err := standby.New(opts.Procs, opts.Snapshots.Holds, sbOpts)
	if err != nil {
		return nil, err
	}
	tracer := opts.Tracer
	if tracer == nil {
		tracer = nooptrace.NewTracerProvider().Tracer("")
	}
	life, stop := context.WithCancelCause(context.Background())
	return &Service{procs: opts.Procs, snapshots: opts.Snapshots, serverEnv: envpolicy.FromList(opts.ServerEnv), standbys: sb, pm: pm, tracer: tracer, startedAt: time.Now(), life: life, stop: stop}, nil
}

// Exec runs in to completion. If ctx ends first, the process group is
// terminated and its ending is still returned. A command that never ran
// (NotRunError) is an ending too: its status, its receipt, no process.
func (s *Service) Exec(ctx context.Context, in ExecInput) (ExecOutput, error) {
	p, err := s.Start(ctx, StartInput{ExecInput: in})
	var nr *NotRunError
	if errors.As(err, &nr) {
		return nr.Output(), nil
	}
	if err != nil {
		return ExecOutput{}, err
	}
	p.Wait(ctx) // a client that goes away takes its process group with it
	return ExecOutput{ProcessID: p.ID(), Pid: p.Pid(), Result: p.Result(), Snapshot: Receipt(p)}, nil
}

// prepare turns in into the spec to spawn: the child's environment, then the
// snapshot replay, which may rewrite argv and env and is returned with its
// input. A capture failure never fails the command; an invalid scope or an
// unsupported shell does, and a request that ends while its command waits
// for the capture is a NotRunError. The wait counts against in.Timeout: the
// process gets what remains of it.
func (s *Service) prepare(ctx context.Context, in ExecInput) (exec.Spec, shellsnap.Receipt, *shellsnap.ReplayInput, error) {
	l, err := s.prepareSnapshot(ctx, in, shellsnap.Launch{
		Argv:   in.Argv,
		Cwd:    in.Cwd,
		Env:    s.childEnv(in),
		Policy: in.EnvPolicy,
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
		Dir:            in.Cwd,
		Env:            envpolicy.List(l.env),
		Stdin:          in.Stdin,
		Timeout:        timeout,
		IdleTimeout:    in.IdleTimeout,
		MaxOutputBytes: in.MaxOutputBytes,
	}, receipt, l.replay, nil
}

// childEnv is the environment of in's child (SHELL-SNAPSHOTS.md 6.1): with a
// policy, the policy applied to the server's environment with the request's
// env laid over it; without one, exactly the request's env. Never-inherited
// names are dropped either way.
func (s *Service) childEnv(in ExecInput) map[string]string {
	env := make(map[string]string, len(in.Env))
	if in.EnvPolicy != nil {
		env = envpolicy.Apply(*in.EnvPolicy, s.serverEnv)
	}
	maps.Copy(env, in.Env)
	envpolicy.DropNeverInherited(env)
	return env
}
