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
	Stats     StatsSource
	Gate      Gate
}

// Limits bounds what one request may ask for.
type Limits struct {
	// DefaultTimeout applies when a request gives no timeoutMs; zero means none.
	DefaultTimeout time.Duration
	// MaxTimeout is the largest timeoutMs (and idleTimeoutMs) a request may give.
	MaxTimeout time.Duration
	// MaxArgs and MaxArgBytes bound argv's length and total size.
	MaxArgs, MaxArgBytes int
	// MaxEnv and MaxEnvBytes bound the env map's length and total size (names
	// and values), envPolicy.set included.
	MaxEnv, MaxEnvBytes int
	// MaxStdinBytes bounds stdin in a request, and one stdin write.
	MaxStdinBytes int
	// MaxOutputBytes bounds maxOutputBytes.
	MaxOutputBytes int
}

// checkArgv enforces the argv limits.
func (l Limits) checkArgv(argv []string) error {
	if l.MaxArgs > 0 && len(argv) > l.MaxArgs {
		return invalidf("argv", "argv has %d elements; the limit is %d", len(argv), l.MaxArgs)
	}
	n := 0
	for _, a := range argv {
		n += len(a) + 1
	}
	if l.MaxArgBytes > 0 && n > l.MaxArgBytes {
		return invalidf("argv", "argv is %d bytes; the limit is %d", n, l.MaxArgBytes)
	}
	return nil
}

// checkEnv enforces the env limits on one map.
func (l Limits) checkEnv(field string, env map[string]string) error {
	if l.MaxEnv > 0 && len(env) > l.MaxEnv {
		return invalidf(field, "%s has %d variables; the limit is %d", field, len(env), l.MaxEnv)
	}
	n := 0
	for k, v := range env {
		n += len(k) + len(v) + 2
	}
	if l.MaxEnvBytes > 0 && n > l.MaxEnvBytes {
		return invalidf(field, "%s is %d bytes; the limit is %d", field, n, l.MaxEnvBytes)
	}
	return nil
}

// checkStdin enforces the stdin limit.
func (l Limits) checkStdin(field string, n int) error {
	if l.MaxStdinBytes > 0 && n > l.MaxStdinBytes {
		return invalidf(field, "%s is %d bytes; the limit is %d", field, n, l.MaxStdinBytes)
	}
	return nil
}

// Server implements the generated strict server interface by translating
// requests into calls on the service layer.
type Server struct {
	exec      Executor
	procs     Processes
	snapshots Snapshots
	stats     StatsSource
	limits    Limits
	spec      []byte
	version   string
	gate      Gate
	http      httpCounters
}

var _ StrictServerInterface = (*Server)(nil)

// New returns a Server over deps that serves spec as its contract and reports version.
func New(deps Deps, limits Limits, spec []byte, version string) *Server {
	gate := deps.Gate
	if gate == nil {
		gate = openGate{}
	}
	return &Server{exec: deps.Exec, procs: deps.Processes, snapshots: deps.Snapshots, stats: deps.Stats, limits: limits, spec: spec, version: version, gate: gate}
}

// openGate is the Gate of a server whose deps bring none.
type openGate struct{}

func (openGate) ShuttingDown() bool { return false }

// httpCounters are the totals /stats reports; otelhttp keeps the real metrics.
type httpCounters struct {
	requests, errors atomic.Int64
}
