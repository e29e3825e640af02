package service

import (
	"context"
	"syscall"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// StartInput is a background process to start: an ExecInput plus whether
// stdin stays open for writes.
type StartInput struct {
	ExecInput
	PipeStdin bool
}

// Start prepares in exactly as Exec does (environment, snapshot replay) and
// starts it in the process table without waiting, in a standby shell when
// one waits for its launch. The snapshot receipt is the process's Tag. A
// command that never ran is a NotRunError; after Shutdown began, Start
// returns exec.ErrShuttingDown.
func (s *Service) Start(ctx context.Context, in StartInput) (*exec.Process, error) {
	if err := s.admit(); err != nil {
		return nil, err
	}
	spec, receipt, replayed, err := s.prepare(ctx, in.ExecInput)
	if err != nil {
		return nil, err
	}
	spec.ID, spec.PipeStdin, spec.Tag = in.ProcessID, in.PipeStdin, receipt
	_, spawn := s.tracer.Start(ctx, "process.spawn")
	p, standby, err := s.standbys.Start(ctx, spec, replayed, func(spec exec.Spec) exec.Spec {
		r := receipt
		r.Standby = true
		spec.Tag = r
		return spec
	})
	spawn.SetAttributes(attribute.Bool("process.standby", standby))
	if err != nil {
		spawn.RecordError(err)
		spawn.SetStatus(codes.Error, "spawn failed")
		spawn.End()
		return nil, err
	}
	spawn.End()
	// The life span outlives the request that started it; it is parented
	// under the request all the same.
	_, life := s.tracer.Start(ctx, "process", trace.WithAttributes(
		attribute.Bool("process.pipe_stdin", in.PipeStdin),
		attribute.String("snapshot.outcome", string(receipt.Outcome)),
	))
	s.pm.track(p, life)
	return p, nil
}

// Receipt returns the snapshot receipt a process was started with.
func Receipt(p *exec.Process) shellsnap.Receipt {
	r, _ := p.Tag().(shellsnap.Receipt)
	return r
}

// Processes returns the running and retained processes, oldest first.
func (s *Service) Processes() []*exec.Process { return s.procs.List() }

// Process returns one process, or ErrNotFound.
func (s *Service) Process(id string) (*exec.Process, error) {
	p, ok := s.procs.Get(id)
	if !ok {
		return nil, ErrNotFound
	}
	return p, nil
}

// Terminate ends a process's group (SIGTERM, grace, SIGKILL) and reports
// whether it was still running.
func (s *Service) Terminate(id string) (bool, error) {
	p, err := s.Process(id)
	if err != nil {
		return false, err
	}
	return p.Terminate(exec.StatusTerminated), nil
}

// Signal sends sig to a process's whole group and reports whether it was
// still running to get it.
func (s *Service) Signal(id string, sig syscall.Signal) (bool, error) {
	p, err := s.Process(id)
	if err != nil {
		return false, err
	}
	return p.Signal(sig), nil
}
