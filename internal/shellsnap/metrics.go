package shellsnap

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// metrics are the reference's snapshot instruments
// (docs/design/snapshots.md#telemetry), with
// the reference's names and tags so that dashboards built for it keep working.
type metrics struct {
	captures        metric.Int64Counter
	captureDuration metric.Float64Histogram
	commands        metric.Int64Counter
	wait            metric.Float64Histogram
}

var (
	attrVersion       = attribute.String("version", "v2")
	attrSuccess       = attribute.String("success", "true")
	attrFailure       = attribute.String("success", "false")
	attrCaptureFailed = attribute.String("failure_reason", "capture_failed")
)

func newMetrics(m metric.Meter) (*metrics, error) {
	if m == nil {
		m = noop.NewMeterProvider().Meter("")
	}
	var out metrics
	var err error
	if out.captures, err = m.Int64Counter("codex.shell_snapshot",
		metric.WithDescription("Executed shell snapshot captures.")); err != nil {
		return nil, err
	}
	if out.captureDuration, err = m.Float64Histogram("codex.shell_snapshot.duration_ms",
		metric.WithDescription("Wall-clock duration of executed shell snapshot captures, in whole milliseconds.")); err != nil {
		return nil, err
	}
	if out.commands, err = m.Int64Counter("codex.shell_snapshot.command",
		metric.WithDescription("Commands that asked for a shell snapshot, by availability and outcome.")); err != nil {
		return nil, err
	}
	if out.wait, err = m.Float64Histogram("codex.shell_snapshot.wait_ms",
		metric.WithDescription("Time a command waited for its shell snapshot, in milliseconds.")); err != nil {
		return nil, err
	}
	return &out, nil
}

// captured records one executed capture, prewarm or execution, success or
// failure. It is never recorded for hits, cached failures or ineligible requests.
func (m *metrics) captured(ctx context.Context, d time.Duration, ok bool) {
	ms := float64(d.Milliseconds())
	if ok {
		set := metric.WithAttributes(attrVersion, attrSuccess)
		m.captures.Add(ctx, 1, set)
		m.captureDuration.Record(ctx, ms, set)
		return
	}
	m.captures.Add(ctx, 1, metric.WithAttributes(attrVersion, attrFailure, attrCaptureFailed))
	m.captureDuration.Record(ctx, ms, metric.WithAttributes(attrVersion, attrFailure))
}

// command records one eligible Execution prepare.
func (m *metrics) command(ctx context.Context, state State, outcome Outcome, wait time.Duration) {
	set := metric.WithAttributes(attrVersion, attribute.String("state", string(state)), attribute.String("outcome", string(outcome)))
	m.commands.Add(ctx, 1, set)
	m.wait.Record(ctx, float64(wait)/float64(time.Millisecond), set)
}
