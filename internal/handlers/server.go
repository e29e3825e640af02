package handlers

import (
	"context"
	"sync/atomic"
	"syscall"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/service"
	"github.com/snapexec/snapexec/internal/session"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// Executor runs commands.
type Executor interface {
	Exec(ctx context.Context, in service.ExecInput) (service.ExecOutput, error)
	StartExec(ctx context.Context, in service.ExecInput) (service.Follower, error)
}

// Processes is the process table, by process id.
type Processes interface {
	Start(ctx context.Context, in service.StartInput) (service.ProcessInfo, error)
	List() []service.ProcessInfo
	Get(id string) (service.ProcessInfo, error)
	Read(ctx context.Context, id string, in service.ReadInput) (exec.ReadResult, error)
	WriteStdin(ctx context.Context, id string, in service.StdinInput) (service.StdinOutput, error)
	Signal(id string, sig syscall.Signal) (bool, error)
	Terminate(id string) (bool, error)
	Resize(id string, size exec.TTYSize) error
	Attach(id string, afterSeq int64) (*service.Attachment, error)
	Follow(id string, afterSeq int64) (service.Follower, error)
}

// Snapshots is the shell-snapshot registry.
type Snapshots interface {
	Prewarm(ctx context.Context, in service.PrewarmInput) (shellsnap.EntryInfo, error)
	Snapshots() []shellsnap.EntryInfo
	ScopeSnapshots(scopeID string) ([]shellsnap.EntryInfo, error)
	ForgetSnapshots(scopeID string)
}

// Sessions are the shell sessions, by session id.
type Sessions interface {
	CreateSession(ctx context.Context, in service.SessionInput) (session.Info, error)
	SessionExec(ctx context.Context, id string, in service.SessionExecInput) (service.SessionExecOutput, error)
	StartSessionExec(ctx context.Context, id string, in service.SessionExecInput) (service.Follower, func(context.Context) (service.SessionExecOutput, error), error)
	Sessions() []session.Info
	Session(id string) (session.Info, error)
	DeleteSession(id string) error
	ForkSession(id, forkID string) (session.Info, error)
}

// StatsSource summarizes the service for /stats.
type StatsSource interface {
	Stats() service.Stats
}

// Gate is the server's shutdown gate (service.Service.Shutdown), which
// refuses new commands itself; the handlers consult it for readiness.
type Gate interface {
	ShuttingDown() bool
}

// Deps is what the handlers call; *service.Service is all of them. A nil
// Gate never closes.
type Deps struct {
	Exec      Executor
	Processes Processes
	Snapshots Snapshots
	Sessions  Sessions
	Stats     StatsSource
	Gate      Gate
	// Files serves /files; nil turns the files API off (files_disabled).
	Files Files
}

// Server implements the generated strict server interface by translating
// requests into calls on the service layer, which validates them.
type Server struct {
	exec      Executor
	procs     Processes
	snapshots Snapshots
	sessions  Sessions
	stats     StatsSource
	spec      []byte
	version   string
	gate      Gate
	files     Files
	http      httpCounters
}

var _ StrictServerInterface = (*Server)(nil)

// New returns a Server over deps that serves spec as its contract and reports version.
func New(deps Deps, spec []byte, version string) *Server {
	gate := deps.Gate
	if gate == nil {
		gate = openGate{}
	}
	return &Server{exec: deps.Exec, procs: deps.Processes, snapshots: deps.Snapshots, sessions: deps.Sessions, stats: deps.Stats, spec: spec, version: version, gate: gate, files: deps.Files}
}

// openGate is the Gate of a server whose deps bring none.
type openGate struct{}

func (openGate) ShuttingDown() bool { return false }

// httpCounters are the totals /stats reports; otelhttp keeps the real metrics.
type httpCounters struct {
	requests, errors atomic.Int64
}

// orZero is *p, or the zero value when an optional field is absent.
func orZero[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
