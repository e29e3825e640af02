package handlers

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/snapexec/snapexec/internal/service"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// Executor runs commands.
type Executor interface {
	Exec(ctx context.Context, in service.ExecInput) (service.ExecOutput, error)
}

// Snapshots is the shell-snapshot registry.
type Snapshots interface {
	Prewarm(ctx context.Context, in service.PrewarmInput) (shellsnap.EntryInfo, error)
	Snapshots() []shellsnap.EntryInfo
	ScopeSnapshots(scopeID string) ([]shellsnap.EntryInfo, error)
	ForgetSnapshots(scopeID string)
}

// StatsSource summarizes the service for /stats.
type StatsSource interface {
	Stats() service.Stats
}

// Deps is what the handlers call; *service.Service is all of them.
type Deps struct {
	Exec      Executor
	Snapshots Snapshots
	Stats     StatsSource
}

// Limits bounds what one request may ask for.
type Limits struct {
	// DefaultTimeout applies when a request gives no timeoutMs; zero means none.
	DefaultTimeout time.Duration
	// MaxTimeout is the largest timeoutMs a request may give.
	MaxTimeout time.Duration
}

// Server implements the generated strict server interface by translating
// requests into calls on the service layer.
type Server struct {
	exec      Executor
	snapshots Snapshots
	stats     StatsSource
	limits    Limits
	spec      []byte
	version   string
	draining  atomic.Bool
	http      httpCounters
}

var _ StrictServerInterface = (*Server)(nil)

// New returns a Server over deps that serves spec as its contract and reports version.
func New(deps Deps, limits Limits, spec []byte, version string) *Server {
	return &Server{exec: deps.Exec, snapshots: deps.Snapshots, stats: deps.Stats, limits: limits, spec: spec, version: version}
}

// Drain makes /readyz answer 503 and new commands be refused, for shutdown.
func (s *Server) Drain() { s.draining.Store(true) }

// httpCounters are the totals /stats reports; otelhttp keeps the real metrics.
type httpCounters struct {
	requests, errors atomic.Int64
}
