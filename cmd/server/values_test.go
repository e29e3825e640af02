package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/prototext"
)

// TestValuesNeverLeaveTheServer plants secrets where clients put values (a
// request's env, envPolicy.set, a variable the login profile exports, a value
// a validation refuses), drives every route that shows something, and greps
// every answer, the log at debug level and the exported spans for them.
func TestValuesNeverLeaveTheServer(t *testing.T) {
	secrets := map[string]string{
		"env":            "env-secret-6f1c2b",
		"envPolicy.set":  "set-secret-93ad71",
		"profile export": "profile-secret-0be4c8",
		"refused value":  "refused-secret-5d27e0",
	}
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	t.Cleanup(collector.Close) // after the server's own cleanup, which flushes the last spans
	telemetryEnv := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL,
		"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
		"OTEL_BSP_SCHEDULE_DELAY":     "50",
	}
	for k, v := range telemetryEnv {
		t.Setenv(k, v) // the exporter reads the process environment itself
	}
	s := startServer(t, telemetryEnv, "--log-level", "debug", "--retention", "1h")

	home := t.TempDir()
	writeTestFile(t, filepath.Join(home, ".bash_profile"), "export PROFILE_PLANTED="+secrets["profile export"]+"\n")
	const scope = "values-scope"
	env := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin", "REQUEST_PLANTED": secrets["env"]}
	policy := map[string]any{"set": map[string]string{"SET_PLANTED": secrets["envPolicy.set"]}}
	shell := map[string]string{"name": "bash", "path": "/bin/bash"}

	var answers []string
	record := func(what string, code int, body string, want int) {
		t.Helper()
		if code != want {
			t.Errorf("%s = %d %s, want %d", what, code, body, want)
		}
		answers = append(answers, what+": "+body)
	}
	post := func(path, body string, want int) {
		t.Helper()
		code, got, hdr := s.do(t, "POST", path, body, nil)
		record("POST "+path, code, got+headerText(hdr), want)
	}
	post("/snapshots/"+scope+"/prewarm", mustJSON(t, map[string]any{"shell": shell, "cwd": home, "env": env, "envPolicy": policy}), 200)
	post("/exec", mustJSON(t, map[string]any{"argv": []string{"/bin/bash", "-lc", "true"}, "cwd": home, "env": env, "envPolicy": policy,
		"shellSnapshot": map[string]any{"scopeId": scope, "shell": shell}}), 200)
	post("/exec", mustJSON(t, map[string]any{"argv": []string{"true"}, "env": env, "envPolicy": policy, "processId": "values-exec"}), 200)
	post("/processes", mustJSON(t, map[string]any{"processId": "values-bg", "argv": []string{"sleep", "30"}, "env": env, "envPolicy": policy}), 201)
	// A session's state holds the values; its answers and listings name them only.
	post("/sessions", mustJSON(t, map[string]any{"sessionId": "values-session", "shell": shell, "cwd": home, "env": env, "envPolicy": policy,
		"shellSnapshot": map[string]any{"scopeId": scope}}), 201)
	post("/sessions/values-session/exec", `{"script":"export SESSION_COPY=\"$REQUEST_PLANTED $PROFILE_PLANTED $SET_PLANTED\"; cd /"}`, 200)
	// Refusals name the field, never the value.
	post("/exec", `{"argv":["true"],"env":{"A":"x\u0000`+secrets["refused value"]+`"}}`, 400)
	post("/exec", `{"argv":["true"],"envPolicy":{"set":{"B":"x\u0000`+secrets["refused value"]+`"}}}`, 400)
	post("/exec", `{"argv":["true"],"env":{"A":"`+secrets["refused value"]+`"},"timeoutMs":"soon"}`, 400)
	post("/exec", `{"argv":["true"],"env":{"A":"`+secrets["refused value"]+`"}} trailing`, 400)
	post("/exec", `{"argv":["true"],"env":{"A":"`+secrets["refused value"]+"\x01"+`"}}`, 400)

	for _, path := range []string{"/healthz", "/readyz", "/stats", "/snapshots", "/snapshots/" + url.PathEscape(scope),
		"/processes", "/processes/values-bg", "/processes/values-exec", "/processes/values-bg/output", "/metrics",
		"/openapi.yaml", "/", "/ui/app.js", "/sessions", "/sessions/values-session"} {
		code, body, hdr := s.do(t, "GET", path, "", nil)
		record("GET "+path, code, body+headerText(hdr), 200)
	}
	if code := s.delete(t, "/processes/values-bg"); code != 200 {
		t.Errorf("DELETE /processes/values-bg = %d", code)
	}
	s.waitStatus(t, "values-bg", "terminated")
	resp, err := http.Get(s.url + "/processes/values-bg/events")
	if err != nil {
		t.Fatal(err)
	}
	events, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	record("GET /processes/values-bg/events", resp.StatusCode, string(events), 200)

	var spans string
	waitFor(t, "the spans of the snapshot capture and the commands", func() bool {
		recv.mu.Lock()
		defer recv.mu.Unlock()
		var b strings.Builder
		for _, sp := range recv.spans {
			b.WriteString(prototext.Format(sp))
		}
		spans = b.String()
		return strings.Contains(spans, "codex.exec_server.process_capture_shell_snapshot") && strings.Contains(spans, "POST /processes")
	})
	time.Sleep(200 * time.Millisecond) // one more batch of spans, from the reads
	recv.mu.Lock()
	for _, sp := range recv.spans {
		spans += prototext.Format(sp)
	}
	recv.mu.Unlock()

	logs := s.logs.String()
	if !strings.Contains(logs, `"level":"debug"`) {
		t.Errorf("the log has no debug line; the test means to read the debug level")
	}
	for where, secret := range secrets {
		for _, a := range answers {
			if strings.Contains(a, secret) {
				t.Errorf("the %s value reached a client: %.300s", where, a)
			}
		}
		if strings.Contains(logs, secret) {
			t.Errorf("the %s value reached the log", where)
		}
		if strings.Contains(spans, secret) {
			t.Errorf("the %s value reached a span", where)
		}
	}
	// What may be shown is: the names.
	if _, body, _ := s.do(t, "GET", "/snapshots/"+scope, "", nil); !strings.Contains(body, `"setNames":["SET_PLANTED"]`) || !strings.Contains(body, "PROFILE_PLANTED") || !strings.Contains(body, "REQUEST_PLANTED") {
		t.Errorf("GET /snapshots/%s = %s, want envPolicy.setNames and the profile's variable names", scope, body)
	}
}

func headerText(h http.Header) string {
	var b strings.Builder
	_ = h.Write(&b)
	return b.String()
}
