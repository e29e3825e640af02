package service

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	nooptrace "go.opentelemetry.io/otel/trace/noop"

	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/sandbox"
	"github.com/snapexec/snapexec/internal/session"
	"github.com/snapexec/snapexec/internal/shellsnap"
	"github.com/snapexec/snapexec/internal/shellsnap/standby"
)

// Service runs commands and keeps what their processes need beside exec's
// table: each process's record.
type Service struct {
	procs     *exec.Manager
	snapshots *shellsnap.Cache
	serverEnv map[string]string
	limits    Limits
	// defaultSandbox confines the requests that give no sandbox.
	defaultSandbox sandbox.Policy
	standbys       *standby.Pool
	sessions       *session.Table
	pm             *processMetrics
	tracer         trace.Tracer
	startedAt      time.Time
	// life ends when Shutdown begins, with exec.ErrShuttingDown as its cause.
	life context.Context
	stop context.CancelCauseFunc

	mu      sync.Mutex
	records map[*exec.Process]record // of the processes in procs' table

}

// Options is what a Service is built from.
type Options struct {
	// Procs runs the processes; Snapshots replays shell snapshots. The
	// Service hears from Procs of the processes its table forgets
	// (exec.Manager.OnForget).
	Procs     *exec.Manager
	Snapshots *shellsnap.Cache
	// ServerEnv is the server's own environment (NAME=VALUE pairs), which an
	// envPolicy inherits from.
	ServerEnv []string
	// Limits bounds what one request may ask for.
	Limits Limits
	// DefaultSandbox confines every command and prewarm whose request gives
	// no sandbox of its own; the zero policy confines nothing. Procs must be
	// able to enforce it (exec.Manager.CheckSandbox), or New fails.
	DefaultSandbox sandbox.Policy
	// Standby bounds the standby shells of warm snapshot commands; its
	// Meter is Meter. Its Max and Idle bound the sessions' standby shells
	// too (session.Options.Standbys, StandbyIdle), which it sets.
	Standby standby.Options
	// Sessions bounds the shell sessions.
	Sessions session.Options
	// Meter records the process metrics and Tracer the process spans; nil
	// records nothing.
	Meter  metric.Meter
	Tracer trace.Tracer
}

// New returns a Service built from opts.
func New(opts Options) (*Service, error) {
	if err := opts.Procs.CheckSandbox(opts.DefaultSandbox); err != nil {
		return nil, fmt.Errorf("default sandbox: %w", err)
	}
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
	// Sessions' standby shells are bounded as the snapshots' are.
	sessOpts := opts.Sessions
	sessOpts.Standbys, sessOpts.StandbyIdle = opts.Standby.Max, opts.Standby.Idle
	sessions, err := session.New(sessOpts, opts.Meter)
	if err != nil {
		return nil, err
	}
	tracer := opts.Tracer
	if tracer == nil {
		tracer = nooptrace.NewTracerProvider().Tracer("")
	}
	life, stop := context.WithCancelCause(context.Background())
	s := &Service{
		procs: opts.Procs, snapshots: opts.Snapshots, serverEnv: envpolicy.FromList(opts.ServerEnv), limits: opts.Limits,
		defaultSandbox: opts.DefaultSandbox,
		standbys:       sb, sessions: sessions, pm: pm, tracer: tracer, startedAt: time.Now(), life: life, stop: stop,
		records: make(map[*exec.Process]record),
	}
	opts.Procs.OnForget(s.forget)
	return s, nil
}
