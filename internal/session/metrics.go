package session

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// metrics are the sessions' instruments, in the server's snapexec
// namespace; labels come from bounded sets only.
type metrics struct {
	commands metric.Int64Counter
	endings  metric.Int64Counter
}

func newMetrics(m metric.Meter, t *Table) (*metrics, error) {
	if m == nil {
		m = noop.NewMeterProvider().Meter("")
	}
	out := &metrics{}
	var err error
	if _, err = m.Int64ObservableGauge("snapexec.sessions.active", metric.WithUnit("{session}"),
		metric.WithDescription("Shell sessions held now."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(t.Stats().Active))
			return nil
		})); err != nil {
		return nil, err
	}
	if out.commands, err = m.Int64Counter("snapexec.sessions.commands", metric.WithUnit("{command}"),
		metric.WithDescription("Session commands that ended, by whether their end state became the session's (state_kept).")); err != nil {
		return nil, err
	}
	if out.endings, err = m.Int64Counter("snapexec.sessions.ended", metric.WithUnit("{session}"),
		metric.WithDescription("Sessions that ended, by reason: deleted, idle or shutdown.")); err != nil {
		return nil, err
	}
	return out, nil
}

func (m *metrics) command(ctx context.Context, kept bool) {
	m.commands.Add(ctx, 1, metric.WithAttributes(attribute.Bool("state_kept", kept)))
}

func (m *metrics) ended(ctx context.Context, reason string) {
	m.endings.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
}
