package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetricsOneNamespaceInSeconds reads /metrics after a snapshot command
// and a background process: every series is snapexec's, the HTTP
// semantic conventions' or target_info; every duration is in seconds; and
// target_info names the service as OTEL_SERVICE_NAME says, with the
// attributes of OTEL_RESOURCE_ATTRIBUTES and the server's version.
func TestMetricsOneNamespaceInSeconds(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "snapexec-metrics-test")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=overridden,deployment.environment.name=ci")
	s := startServer(t, nil)
	home := t.TempDir()
	writeTestFile(t, home+"/.bashrc", "hello() { echo hi; }\n")
	for range 2 {
		if code, got, _ := s.post(t, "/exec", snapshotBody(home, "hello", "metrics", "bash", "/bin/bash")); code != 200 || got["stdout"] != "hi\n" {
			t.Fatalf("POST /exec = %d %v", code, got)
		}
	}
	code, body := s.get(t, "/metrics")
	if code != 200 {
		t.Fatalf("GET /metrics = %d", code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	for _, want := range []string{"snapexec_snapshot_captures_total", "snapexec_snapshot_capture_duration_seconds",
		"snapexec_snapshot_commands_total", "snapexec_snapshot_wait_duration_seconds", "snapexec_processes_finished_total",
		"snapexec_process_duration_seconds", "snapexec_processes_active", "http_server_request_duration_seconds", "target_info"} {
		if families[want] == nil {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for name, f := range families {
		switch {
		case name == "target_info":
		case strings.HasPrefix(name, "snapexec_"), strings.HasPrefix(name, "http_server_"):
		default:
			t.Errorf("%s is outside the snapexec_ namespace and the HTTP semantic conventions", name)
		}
		if strings.Contains(name, "_ms") || strings.Contains(name, "milliseconds") {
			t.Errorf("%s is in milliseconds", name)
		}
		if f.GetType() == dto.MetricType_HISTOGRAM && !strings.HasSuffix(name, "_seconds") && !strings.HasSuffix(name, "_bytes") {
			t.Errorf("histogram %s is in neither seconds nor bytes", name)
		}
	}
	labels := map[string]string{}
	if info := families["target_info"]; info != nil && len(info.GetMetric()) == 1 {
		for _, l := range info.GetMetric()[0].GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
	}
	for k, want := range map[string]string{"service_name": "snapexec-metrics-test", "service_version": version, "deployment_environment_name": "ci"} {
		if labels[k] != want {
			t.Errorf("target_info %s = %q, want %q (labels %v)", k, labels[k], want, labels)
		}
	}
}

// TestTelemetryExporters sets up telemetry under each exporter choice: the
// standard values work, and an unknown one is an error naming its variable.
func TestTelemetryExporters(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"unset", nil, ""},
		{"none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}, ""},
		{"console", map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "console"}, ""},
		{"otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, ""},
		{"prometheus listener", map[string]string{"OTEL_METRICS_EXPORTER": "prometheus", "OTEL_EXPORTER_PROMETHEUS_HOST": "127.0.0.1", "OTEL_EXPORTER_PROMETHEUS_PORT": "0"}, ""},
		{"unknown traces exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin2"}, `OTEL_TRACES_EXPORTER "zipkin2"`},
		{"unknown metrics exporter", map[string]string{"OTEL_METRICS_EXPORTER": "statsd"}, `OTEL_METRICS_EXPORTER "statsd"`},
		{"malformed resource attributes", map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "team"}, "OTEL_RESOURCE_ATTRIBUTES"},
		{"bad protocol", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, `OTEL_TRACES_EXPORTER "otlp"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
				"OTEL_EXPORTER_PROMETHEUS_HOST", "OTEL_EXPORTER_PROMETHEUS_PORT", "OTEL_RESOURCE_ATTRIBUTES"} {
				t.Setenv(k, tc.env[k])
			}
			tel, err := setupTelemetry(context.Background())
			if err == nil {
				// Nothing listens on 127.0.0.1:1: the flush's error is expected.
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				_ = tel.shutdown(ctx)
				cancel()
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("setupTelemetry(%v) = %v, want no error", tc.env, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("setupTelemetry(%v) = %v, want an error with %q", tc.env, err, tc.wantErr)
			}
		})
	}
}

// TestSpansRecordedOnlyWithAnExporter: without a span exporter the server's
// spans are not recorded, since nothing would ever read them, yet each still
// has a trace id for the log lines; with one they are recorded.
func TestSpansRecordedOnlyWithAnExporter(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env       map[string]string
		recording bool
	}{
		{"unset", nil, false},
		{"none", map[string]string{"OTEL_TRACES_EXPORTER": "none"}, false},
		{"otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_SAMPLER"} {
				t.Setenv(k, tc.env[k])
			}
			tel, err := setupTelemetry(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				// Nothing listens on 127.0.0.1:1: the flush's error is expected.
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				_ = tel.shutdown(ctx)
				cancel()
			}()
			_, span := tel.tracer().Start(context.Background(), "request")
			defer span.End()
			if span.IsRecording() != tc.recording || !span.SpanContext().HasTraceID() {
				t.Errorf("a span under %v: recording %v, trace id %v; want recording %v, a trace id", tc.env, span.IsRecording(), span.SpanContext().TraceID(), tc.recording)
			}
		})
	}
}
