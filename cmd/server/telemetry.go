package main

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// telemetry is the server's OpenTelemetry setup: a meter provider whose
// Prometheus exporter writes to a private registry (never the global one), and
// the /metrics handler that serves that registry.
type telemetry struct {
	meterProvider *sdkmetric.MeterProvider
	metrics       http.Handler
}

func setupTelemetry() (*telemetry, error) {
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(
		otelprom.WithRegisterer(registry),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
	)
	if err != nil {
		return nil, err
	}
	return &telemetry{
		meterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter)),
		metrics:       promhttp.HandlerFor(registry, promhttp.HandlerOpts{}),
	}, nil
}

func (t *telemetry) meter() metric.Meter {
	return t.meterProvider.Meter("github.com/snapexec/snapexec")
}

// shutdown flushes and stops the providers.
func (t *telemetry) shutdown(ctx context.Context) error { return t.meterProvider.Shutdown(ctx) }
