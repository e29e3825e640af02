package service

import (
	"context"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/session"
	"github.com/snapexec/snapexec/internal/shellsnap"
	"github.com/snapexec/snapexec/internal/shellsnap/standby"
)

// Process results, the reference's bounded label (docs/design/snapshots.md#telemetry).
const (
	resultSuccess    = "success"
	resultError      = "error"
	resultTerminated = "terminated"
)

// processMetrics are the reference's process instruments (in snapexec's
// namespace) plus the totals /stats reports.
type processMetrics struct {
	finished metric.Int64Counter
	duration metric.Float64Histogram

	success, failure, terminated atomic.Int64
}

func newProcessMetrics(m metric.Meter, procs *exec.Manager) (*processMetrics, error) {
	if m == nil {
		m = noop.NewMeterProvider().Meter("")
	}
	pm := &processMetrics{}
	var err error
	if _, err = m.Int64ObservableGauge("snapexec.processes.active", metric.WithUnit("{process}"),
		metric.WithDescription("Processes running now."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(procs.Running()))
			return nil
		})); err != nil {
		return nil, err
	}
	if _, err = m.Int64ObservableCounter("snapexec.processes.escaped", metric.WithUnit("{process}"),
		metric.WithDescription("Processes found outside the process group they were started in (setsid, a daemon's double fork): no group kill reaches them, so the server ends them at shutdown at the latest."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(procs.Escaped())
			return nil
		})); err != nil {
		return nil, err
	}
	if pm.finished, err = m.Int64Counter("snapexec.processes.finished", metric.WithUnit("{process}"),
		metric.WithDescription("Processes that ended, by result.")); err != nil {
		return nil, err
	}
	if pm.duration, err = m.Float64Histogram("snapexec.process.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Process run time, by result."),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800)); err != nil {
		return nil, err
	}
	return pm, nil
}

// track records p's ending once it ends, and ends its life span.
func (pm *processMetrics) track(p *exec.Process, life trace.Span) {
	go func() {
		r := p.Result()
		result := resultOf(r)
		life.SetAttributes(attribute.String("process.status", string(r.Status)), attribute.String("process.result", result))
		if r.ExitCode != nil {
			life.SetAttributes(attribute.Int("process.exit_code", *r.ExitCode))
		}
		life.End()
		switch result {
		case resultSuccess:
			pm.success.Add(1)
		case resultError:
			pm.failure.Add(1)
		default:
			pm.terminated.Add(1)
		}
		set := metric.WithAttributes(attribute.String("result", result))
		pm.finished.Add(context.Background(), 1, set)
		pm.duration.Record(context.Background(), r.Duration.Seconds(), set)
	}()
}

func resultOf(r exec.Result) string {
	switch {
	case r.Status == exec.StatusTerminated || r.Status == exec.StatusShutdown:
		return resultTerminated
	case r.Status == exec.StatusExited && r.ExitCode != nil && *r.ExitCode == 0:
		return resultSuccess
	default:
		return resultError
	}
}

// Stats is the summary the dashboard shows.
type Stats struct {
	StartedAt  time.Time
	Snapshots  shellsnap.Stats
	Standby    standby.Stats
	Running    int
	Success    int64
	Error      int64
	Terminated int64
	// Escaped counts the processes found outside the group they were
	// started in since the start.
	Escaped int64
	// Sessions are the session table's totals.
	Sessions session.Stats
}

// Stats returns the summary; its cost does not grow with history.
func (s *Service) Stats() Stats {
	return Stats{
		StartedAt:  s.startedAt,
		Snapshots:  s.snapshots.Stats(),
		Standby:    s.standbys.Stats(),
		Sessions:   s.sessions.Stats(),
		Running:    s.procs.Running(),
		Success:    s.pm.success.Load(),
		Error:      s.pm.failure.Load(),
		Terminated: s.pm.terminated.Load(),
		Escaped:    s.procs.Escaped(),
	}
}
