package shellsnap

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// metrics are the snapshot instruments (docs/design/snapshots.md#telemetry):
// the reference's counters and tags, in snapexec's namespace and in seconds.
type metrics struct {
	captures        metric.Int64Counter
	captureDuration metric.Float64Histogram
	commands        metric.Int64Counter
	wait            metric.Float64Histogram
}

// secondsBuckets cover a wait on a hit (microseconds) to a capture at the
// longest --capture-timeout.
var secondsBuckets = metric.WithExplicitBucketBoundaries(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

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
	if out.captures, err = m.Int64Counter("snapexec.snapshot.captures", metric.WithUnit("{capture}"),
		metric.WithDescription("Shell snapshot captures that ran, prewarm or execution, by success and failure_reason.")); err != nil {
		return nil, err
	}
	if out.captureDuration, err = m.Float64Histogram("snapexec.snapshot.capture.duration", metric.WithUnit("s"),
		metric.WithDescription("Wall-clock duration of the shell snapshot captures that ran, by success."), secondsBuckets); err != nil {
		return nil, err
	}
	if out.commands, err = m.Int64Counter("snapexec.snapshot.commands", metric.WithUnit("{command}"),
		metric.WithDescription("Commands that asked for a shell snapshot, by state and outcome.")); err != nil {
		return nil, err
	}
	if out.wait, err = m.Float64Histogram("snapexec.snapshot.wait.duration", metric.WithUnit("s"),
		metric.WithDescription("Time a command waited for its shell snapshot, by state and outcome."), secondsBuckets); err != nil {
		return nil, err
	}
	return &out, nil
}

// captured records one executed capture, prewarm or execution, success or
// failure. It is never recorded for hits, cached failures or ineligible requests.
func (m *metrics) captured(ctx context.Context, d time.Duration, ok bool) {
	secs := d.Seconds()
	if ok {
		set := metric.WithAttributes(attrVersion, attrSuccess)
		m.captures.Add(ctx, 1, set)
		m.captureDuration.Record(ctx, secs, set)
		return
	}
	m.captures.Add(ctx, 1, metric.WithAttributes(attrVersion, attrFailure, attrCaptureFailed))
	m.captureDuration.Record(ctx, secs, metric.WithAttributes(attrVersion, attrFailure))
}

// command records one eligible Execution prepare.
func (m *metrics) command(ctx context.Context, state State, outcome Outcome, wait time.Duration) {
	set := metric.WithAttributes(attrVersion, attribute.String("state", string(state)), attribute.String("outcome", string(outcome)))
	m.commands.Add(ctx, 1, set)
	m.wait.Record(ctx, wait.Seconds(), set)
}
