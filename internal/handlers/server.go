package handlers

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/snapexec/snapexec/internal/service"
)

// Executor runs commands; *service.Service is the real one.
type Executor interface {
	Exec(ctx context.Context, in service.ExecInput) (service.ExecOutput, error)
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
	exec     Executor
	limits   Limits
	spec     []byte
	draining atomic.Bool
}

var _ StrictServerInterface = (*Server)(nil)

// New returns a Server that runs commands through exec and serves spec as its contract.
func New(exec Executor, limits Limits, spec []byte) *Server {
	return &Server{exec: exec, limits: limits, spec: spec}
}

// Drain makes /readyz answer 503 and new commands be refused, for shutdown.
func (s *Server) Drain() { s.draining.Store(true) }
