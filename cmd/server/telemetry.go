package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// instrumentationName names snapexec's meter and tracer.
const instrumentationName = "github.com/snapexec/snapexec"

// defaultServiceName is service.name when neither OTEL_SERVICE_NAME nor
// OTEL_RESOURCE_ATTRIBUTES names the service.
const defaultServiceName = "snapexec"

// telemetry is the server's OpenTelemetry setup: a meter provider whose
// Prometheus reader writes to a private registry (never the global one),
// served at /metrics, plus whatever OTEL_METRICS_EXPORTER adds; a tracer
// provider exporting where OTEL_TRACES_EXPORTER says.
type telemetry struct {
	meterProvider  *sdkmetric.MeterProvider
	tracerProvider trace.TracerProvider
	propagator     propagation.TextMapPropagator
	metrics        http.Handler
	shutdowns      []func(context.Context) error
}

// setupTelemetry builds the providers from the standard OTEL_* variables.
// Unlike the rest of the configuration it reads the process environment,
// not run's environ: the OpenTelemetry SDK and autoexport read it there,
// and reading it in one place keeps every variable they document working
// as documented.
//
//   - The resource: service.name "snapexec" and service.version, then
//     OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME over them.
//   - Metrics: /metrics always serves the Prometheus text format (behind the
//     token, like every route but the probes). OTEL_METRICS_EXPORTER adds a
//     second reader through autoexport (otlp, console, or prometheus, which
//     is autoexport's own listener on OTEL_EXPORTER_PROMETHEUS_HOST:PORT);
//     unset, nothing is pushed.
//   - Traces: OTEL_TRACES_EXPORTER through autoexport (otlp, console,
//     none). Unset, spans go over OTLP only when an OTLP endpoint variable is
//     set: the specification's default, OTLP to localhost:4318, would log an
//     export error every few seconds on a machine with no collector, which is
//     where a development server runs.
func setupTelemetry(ctx context.Context) (_ *telemetry, err error) {
	t := &telemetry{propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})}
	defer func() {
		if err != nil {
			err = errors.Join(err, t.shutdown(context.Background()))
		}
	}()
	res, err := resource.New(ctx,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(semconv.ServiceName(defaultServiceName), semconv.ServiceVersion(version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}

	registry := prometheus.NewRegistry()
	pull, err := otelprom.New(
		otelprom.WithRegisterer(registry),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
	)
	if err != nil {
		return nil, err
	}
	t.metrics = promhttp.HandlerFor(registry, promhttp.HandlerOpts{})
	push, err := autoexport.NewMetricReader(ctx, autoexport.WithFallbackMetricReader(
		func(context.Context) (sdkmetric.Reader, error) { return nil, nil }))
	if err != nil {
		return nil, fmt.Errorf("OTEL_METRICS_EXPORTER %q: %w", os.Getenv("OTEL_METRICS_EXPORTER"), err)
	}
	mpOpts := []sdkmetric.Option{sdkmetric.WithResource(res), sdkmetric.WithReader(pull), sdkmetric.WithView(httpServerView())}
	if push != nil && !autoexport.IsNoneMetricReader(push) {
		mpOpts = append(mpOpts, sdkmetric.WithReader(push))
	}
	t.meterProvider = sdkmetric.NewMeterProvider(mpOpts...)
	t.shutdowns = append(t.shutdowns, t.meterProvider.Shutdown)

	spans, err := autoexport.NewSpanExporter(ctx, autoexport.WithFallbackSpanExporter(
		func(ctx context.Context) (sdktrace.SpanExporter, error) {
			if os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" {
				return nil, nil
			}
			return autoexport.NewSpanExporter(ctx) // OTLP, the default
		}))
	if err != nil {
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER %q: %w", os.Getenv("OTEL_TRACES_EXPORTER"), err)
	}
	tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if spans != nil && !autoexport.IsNoneSpanExporter(spans) {
		tpOpts = append(tpOpts, sdktrace.WithBatcher(spans))
	} else {
		// Without an exporter spans are still made, so that every log line
		// of a request has a trace id to grep for (a client's traceparent
		// continued), but never recorded: nothing would read them. A
		// recorded span kept its attributes and, through the trace-based
		// exemplar filter, made every HTTP metric copy the attributes its
		// view drops: about 7 KiB allocated per /exec.
		tpOpts = append(tpOpts, sdktrace.WithSampler(sdktrace.NeverSample()))
	}
	tp := sdktrace.NewTracerProvider(tpOpts...)
	t.tracerProvider = tp
	t.shutdowns = append(t.shutdowns, tp.Shutdown)
	return t, nil
}

// httpServerView keeps otelhttp's HTTP server metrics to labels from a fixed
// set: the route template (or "unrouted"), the method (otelhttp folds unknown
// ones into _OTHER) and the status. otelhttp would also label server.address
// and server.port from the Host header, which the client chooses: a web page
// can send thousands of names that resolve to 127.0.0.1, each a new series,
// until real traffic falls into otel_metric_overflow. Allowing keys, rather
// than denying these two, keeps whatever a later otelhttp adds out as well.
// These instruments keep no exemplars: an exemplar carries the attributes the
// filter dropped, the Host among them, into /metrics.
func httpServerView() sdkmetric.View {
	return sdkmetric.NewView(
		sdkmetric.Instrument{Scope: instrumentation.Scope{Name: otelhttp.ScopeName}},
		sdkmetric.Stream{
			AttributeFilter: attribute.NewAllowKeysFilter(
				semconv.HTTPRouteKey, semconv.HTTPRequestMethodKey, semconv.HTTPResponseStatusCodeKey),
			ExemplarReservoirProviderSelector: func(sdkmetric.Aggregation) exemplar.ReservoirProvider {
				return exemplar.FixedSizeReservoirProvider(0)
			},
		},
	)
}

func (t *telemetry) meter() metric.Meter { return t.meterProvider.Meter(instrumentationName) }

func (t *telemetry) tracer() trace.Tracer { return t.tracerProvider.Tracer(instrumentationName) }

// shutdown flushes and stops the providers.
func (t *telemetry) shutdown(ctx context.Context) error {
	var errs []error
	for _, f := range t.shutdowns {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}
