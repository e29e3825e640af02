package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

func (s *testServer) get(t *testing.T, path string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(s.url + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

func (s *testServer) delete(t *testing.T, path string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, s.url+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("DELETE %s: %v", path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// scopeEntry returns the only entry of scope.
func (s *testServer) scopeEntry(t *testing.T, scope string) map[string]any {
	t.Helper()
	code, body := s.get(t, "/snapshots/"+url.PathEscape(scope))
	var got struct{ Entries []map[string]any }
	if err := json.Unmarshal(body, &got); err != nil || code != 200 || len(got.Entries) != 1 {
		t.Fatalf("GET /snapshots/%s = %d %s, want one entry", scope, code, body)
	}
	return got.Entries[0]
}

func snapshotBody(home, script, scope, shellName, shellPath string) map[string]any {
	return map[string]any{
		"argv":          []string{shellPath, "-lc", script},
		"cwd":           home,
		"env":           map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"},
		"shellSnapshot": map[string]any{"scopeId": scope, "shell": map[string]string{"name": shellName, "path": shellPath}},
	}
}

func prewarmBody(home string) map[string]any {
	return map[string]any{
		"shell": map[string]string{"name": "bash", "path": "/bin/bash"},
		"cwd":   home,
		"env":   map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"},
	}
}

// TestSeedScenarioOverHTTP replays the reference's failing-profile case
// (failed_prewarm_preserves_retry_limit) through the API.
func TestSeedScenarioOverHTTP(t *testing.T) {
	s := startServer(t, nil)
	home := t.TempDir()
	rc := filepath.Join(home, ".bashrc")
	// The sleep holds the prewarm's capture open while the command arrives.
	writeTestFile(t, rc, "printf x >> \"$HOME/captures\"\nsleep 0.5\nexit 7\n")
	const scope = "attachment-1"

	prewarm := make(chan int, 1)
	go func() {
		code, _, _ := s.post(t, "/snapshots/"+scope+"/prewarm", prewarmBody(home))
		prewarm <- code
	}()
	waitFor(t, "the prewarm's capture to start", func() bool { return captures(home) == 1 })
	code, got, _ := s.post(t, "/exec", snapshotBody(home, "echo ran", scope, "bash", "/bin/bash"))
	receipt := got["snapshot"].(map[string]any)
	if code != 200 || got["stdout"] != "ran\n" || receipt["outcome"] != "fallback" || receipt["state"] != "on_demand" {
		t.Errorf("/exec during a failing prewarm = %d %q %v, want 200 ran fallback on_demand", code, got["stdout"], receipt)
	}
	if code := <-prewarm; code != http.StatusBadGateway {
		t.Errorf("failing prewarm = %d, want 502", code)
	}
	e := s.scopeEntry(t, scope)
	if e["state"] != "failed" || e["attempts"] != 1.0 || e["retryAt"] == nil {
		t.Errorf("entry after the first failure = %v, want failed, attempts 1, retryAt", e)
	}
	if captures(home) != 2 {
		t.Errorf("captures = %d, want 2 (the prewarm's and the command's own)", captures(home))
	}

	// In backoff: no capture. After it: attempts 2 and 3, then exhausted.
	s.post(t, "/exec", snapshotBody(home, "true", scope, "bash", "/bin/bash"))
	if captures(home) != 2 {
		t.Errorf("a command during the backoff captured (captures = %d)", captures(home))
	}
	for attempt := 2; attempt <= 3; attempt++ {
		retryAt, _ := time.Parse(time.RFC3339Nano, s.scopeEntry(t, scope)["retryAt"].(string))
		time.Sleep(time.Until(retryAt) + 50*time.Millisecond)
		_, got, _ := s.post(t, "/exec", snapshotBody(home, "true", scope, "bash", "/bin/bash"))
		if r := got["snapshot"].(map[string]any); r["outcome"] != "fallback" {
			t.Errorf("attempt %d receipt = %v, want fallback", attempt, r)
		}
		if e := s.scopeEntry(t, scope); e["attempts"] != float64(attempt) {
			t.Errorf("attempt %d entry attempts = %v", attempt, e["attempts"])
		}
	}
	if e := s.scopeEntry(t, scope); e["state"] != "exhausted" {
		t.Errorf("entry after three failures = %v, want exhausted", e["state"])
	}
	time.Sleep(1100 * time.Millisecond)
	s.post(t, "/exec", snapshotBody(home, "true", scope, "bash", "/bin/bash"))
	if captures(home) != 4 {
		t.Errorf("captures after the budget = %d, want 4", captures(home))
	}

	// Fixed profile and a DELETE: the next command uses a fresh snapshot.
	writeTestFile(t, rc, "printf x >> \"$HOME/captures\"\nprofile_helper() { printf recovered; }\n")
	if code := s.delete(t, "/snapshots/"+scope); code != http.StatusNoContent {
		t.Errorf("DELETE /snapshots/%s = %d, want 204", scope, code)
	}
	_, got, _ = s.post(t, "/exec", snapshotBody(home, "profile_helper", scope, "bash", "/bin/bash"))
	if r := got["snapshot"].(map[string]any); r["outcome"] != "used" || got["stdout"] != "recovered" {
		t.Errorf("after the fix = %v %q, want used recovered", r, got["stdout"])
	}

	want := map[string]float64{
		`failure_reason="capture_failed",success="false",version="v2"`: 4,
		`success="true",version="v2"`:                                  1,
	}
	if got := promSeries(t, s, "snapexec_snapshot_captures_total"); !equalSeries(got, want) {
		t.Errorf("snapexec_snapshot_captures_total = %v, want %v", got, want)
	}
	wantHist := map[string]float64{`success="false",version="v2"`: 4, `success="true",version="v2"`: 1}
	if got := promSeries(t, s, "snapexec_snapshot_capture_duration_seconds_count"); !equalSeries(got, wantHist) {
		t.Errorf("snapexec_snapshot_capture_duration_seconds_count = %v, want %v", got, wantHist)
	}
}

func TestEditedProfileIsRecaptured(t *testing.T) {
	s := startServer(t, nil)
	home := t.TempDir()
	rc := filepath.Join(home, ".bashrc")
	writeTestFile(t, rc, "printf x >> \"$HOME/captures\"\nhelper() { echo one; }\n")
	for range 3 {
		_, got, _ := s.post(t, "/exec", snapshotBody(home, "helper", "edit", "bash", "/bin/bash"))
		if got["stdout"] != "one\n" {
			t.Fatalf("helper printed %q, want one", got["stdout"])
		}
	}
	if captures(home) != 1 {
		t.Errorf("an untouched profile was captured %d times, want 1", captures(home))
	}
	writeTestFile(t, rc, "printf x >> \"$HOME/captures\"\nhelper() { echo two; }\n")
	_, got, _ := s.post(t, "/exec", snapshotBody(home, "helper", "edit", "bash", "/bin/bash"))
	if r := got["snapshot"].(map[string]any); got["stdout"] != "two\n" || r["state"] != "on_demand" {
		t.Errorf("after the edit helper printed %q (%v), want two from a fresh capture", got["stdout"], r)
	}
	if e := s.scopeEntry(t, "edit"); e["attempts"] != 1.0 || e["state"] != "ready" {
		t.Errorf("recaptured entry = %v, want a fresh ready entry", e)
	}
}

func TestRegistryNeverShowsValues(t *testing.T) {
	s := startServer(t, nil)
	home := t.TempDir()
	writeTestFile(t, filepath.Join(home, ".bashrc"), "export MY_API_TOKEN=s3cret\nexport PLAIN=visible-value\n")
	if code, got, _ := s.post(t, "/snapshots/secrets/prewarm", prewarmBody(home)); code != 200 || got["state"] != "ready" {
		t.Fatalf("prewarm = %d %v", code, got)
	}
	for _, path := range []string{"/snapshots", "/snapshots/secrets", "/stats", "/metrics"} {
		_, body := s.get(t, path)
		for _, value := range []string{"s3cret", "visible-value"} {
			if strings.Contains(string(body), value) {
				t.Errorf("GET %s contains the value %q", path, value)
			}
		}
	}
	e := s.scopeEntry(t, "secrets")
	names := e["envNames"].([]any)
	if !contains(names, "PLAIN") || !contains(names, "MY_API_TOKEN") {
		t.Errorf("envNames = %v, want the names", names)
	}
	if strings.Contains(s.logs.String(), "s3cret") || strings.Contains(s.logs.String(), "visible-value") {
		t.Errorf("a value reached the log")
	}
}

// promSeries returns name's samples by their labels, less the otel_scope ones.
func promSeries(t *testing.T, s *testServer, name string) map[string]float64 {
	t.Helper()
	_, body := s.get(t, "/metrics")
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		labels := line[len(name)+1 : strings.LastIndex(line, "}")]
		var kept []string
		for _, l := range strings.Split(labels, ",") {
			if !strings.HasPrefix(l, "otel_scope_") {
				kept = append(kept, l)
			}
		}
		sort.Strings(kept)
		var v float64
		_ = json.Unmarshal([]byte(strings.TrimSpace(line[strings.LastIndex(line, "}")+1:])), &v)
		out[strings.Join(kept, ",")] = v
	}
	return out
}

func equalSeries(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func captures(home string) int {
	b, _ := os.ReadFile(filepath.Join(home, "captures"))
	return len(b)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func contains(list []any, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
