package main

import (
	"bytes"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an in-test OTLP/HTTP trace endpoint on loopback.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

func (o *otlpReceiver) byName() map[string]*tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := map[string]*tracepb.Span{}
	for _, s := range o.spans {
		m[s.Name] = s
	}
	return m
}

func TestTracesExportedUnderIncomingParent(t *testing.T) {
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL,
		"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
		"OTEL_BSP_SCHEDULE_DELAY":     "50",
		"OTEL_SERVICE_NAME":           "snapexec-test",
	}
	for k, v := range env {
		t.Setenv(k, v) // the exporter reads the process environment itself
	}
	s := startServer(t, env)

	home := t.TempDir()
	writeTestFile(t, home+"/.bashrc", "traced() { echo traced; }\n")
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, _ := http.NewRequest("POST", s.url+"/exec", strings.NewReader(mustJSON(t, snapshotBody(home, "traced", "traces", "bash", "/bin/bash"))))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(body, []byte(`"stdout":"traced\n"`)) {
		t.Fatalf("/exec = %s", body)
	}

	want := []string{"POST /exec", "codex.exec_server.process_prepare_shell_snapshot",
		"codex.exec_server.process_capture_shell_snapshot", "shellsnap.replay", "process.spawn", "process"}
	var spans map[string]*tracepb.Span
	deadline := time.Now().Add(10 * time.Second)
	for {
		spans = recv.byName()
		missing := 0
		for _, name := range want {
			if spans[name] == nil {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("spans received: %v, want %v", keys(spans), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	id := func(b []byte) string { return hex.EncodeToString(b) }
	parentOf := map[string]string{
		"POST /exec": parentID,
		"codex.exec_server.process_prepare_shell_snapshot": id(spans["POST /exec"].SpanId),
		"codex.exec_server.process_capture_shell_snapshot": id(spans["codex.exec_server.process_prepare_shell_snapshot"].SpanId),
		"shellsnap.replay": id(spans["codex.exec_server.process_prepare_shell_snapshot"].SpanId),
		"process.spawn":    id(spans["POST /exec"].SpanId),
		"process":          id(spans["POST /exec"].SpanId),
	}
	for name, parent := range parentOf {
		sp := spans[name]
		if id(sp.TraceId) != traceID {
			t.Errorf("span %q trace %s, want %s", name, id(sp.TraceId), traceID)
		}
		if id(sp.ParentSpanId) != parent {
			t.Errorf("span %q parent %s, want %s", name, id(sp.ParentSpanId), parent)
		}
	}
	for _, kv := range spans["POST /exec"].Attributes {
		if kv.Key == "http.route" && kv.Value.GetStringValue() != "/exec" {
			t.Errorf("http.route = %v, want /exec", kv.Value)
		}
	}
	if !strings.Contains(s.logs.String(), `"traceId":"`+traceID+`"`) {
		t.Errorf("the access log lacks the trace id")
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestEveryLogLineHasATraceID(t *testing.T) {
	s := startServer(t, nil) // no exporter configured
	s.post(t, "/exec", map[string]any{"argv": []string{"true"}})
	found := false
	for _, line := range strings.Split(s.logs.String(), "\n") {
		if strings.Contains(line, `"message":"request"`) {
			found = true
			if !strings.Contains(line, `"traceId":"`) {
				t.Errorf("access log line without a trace id: %s", line)
			}
		}
	}
	if !found {
		t.Errorf("no access log line")
	}
}
