package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
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

// telemetry is the server's OpenTelemetry setup: a meter provider whose
// Prometheus exporter writes to a private registry (never the global one),
// the /metrics handler that serves that registry, and a tracer provider that
// exports over OTLP when the standard OTEL_* variables say where.
type telemetry struct {
	meterProvider  *sdkmetric.MeterProvider
	tracerProvider trace.TracerProvider
	propagator     propagation.TextMapPropagator
	metrics        http.Handler
	shutdowns      []func(context.Context) error
}

// setupTelemetry builds the providers. Traces are exported only when
// OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) is set and
// OTEL_TRACES_EXPORTER is not "none"; the protocol comes from
// OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf or grpc). The exporters read
// the rest of the OTEL_* variables themselves.
func setupTelemetry(ctx context.Context, getenv func(string) string) (*telemetry, error) {
	registry := prometheus.NewRegistry()
	promExporter, err := otelprom.New(
		otelprom.WithRegisterer(registry),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
	)
	if err != nil {
		return nil, err
	}
	res, err := resource.Merge(resource.Default(), resource.NewWithAttributes(semconv.SchemaURL,
		semconv.ServiceName(serviceName(getenv)), semconv.ServiceVersion(version)))
	if err != nil {
		return nil, err
	}
	t := &telemetry{
		meterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(promExporter), sdkmetric.WithView(httpServerView())),
		propagator:    propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		metrics:       promhttp.HandlerFor(registry, promhttp.HandlerOpts{}),
	}
	t.shutdowns = append(t.shutdowns, t.meterProvider.Shutdown)

	endpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") + getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	if endpoint == "" || getenv("OTEL_TRACES_EXPORTER") == "none" {
		// No exporter: spans are still made (a few microseconds each), so
		// that every log line of a request has a trace id to grep for.
		tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res))
		t.tracerProvider = tp
		t.shutdowns = append(t.shutdowns, tp.Shutdown)
		return t, nil
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exporter sdktrace.SpanExporter
	switch strings.ToLower(protocol) {
	case "", "http/protobuf":
		exporter, err = otlptracehttp.New(ctx)
	case "grpc":
		exporter, err = otlptracegrpc.New(ctx)
	default:
		err = fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: use http/protobuf or grpc", protocol)
	}
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
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

func serviceName(getenv func(string) string) string {
	if name := getenv("OTEL_SERVICE_NAME"); name != "" {
		return name
	}
	return "snapexec"
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
