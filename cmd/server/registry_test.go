package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/snapexec/snapexec/client"
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
func (s *testServer) scopeEntry(t *testing.T, scope string) client.SnapshotEntry {
	t.Helper()
	entries := s.scopeEntries(t, scope)
	if len(entries) != 1 {
		t.Fatalf("GET /snapshots/%s = %+v, want one entry", scope, entries)
	}
	return entries[0]
}

// scopeEntries returns the entries of scope, none when it has none.
func (s *testServer) scopeEntries(t *testing.T, scope string) []client.SnapshotEntry {
	t.Helper()
	got, err := client.Result(s.api(t).GetSnapshotsWithResponse(context.Background(), scope))
	if e, ok := errors.AsType[*client.Error](err); ok && e.Status == http.StatusNotFound {
		// No entry yet: a poll may come before the request that makes one.
		return nil
	}
	if err != nil {
		t.Fatalf("GET /snapshots/%s: %v", scope, err)
	}
	return got.Entries
}

// snapshotRequest is snapshotBody as the client sends it: script run by
// bash -lc in home, with scope's snapshot.
func snapshotRequest(home, script, scope string) client.ExecRequest {
	env := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}
	return client.ExecRequest{
		Argv: []string{"/bin/bash", "-lc", script}, Cwd: &home, Env: &env,
		ShellSnapshot: &client.ShellSnapshotRequest{ScopeId: scope, Shell: client.ShellInfo{Name: "bash", Path: "/bin/bash"}},
	}
}

// prewarmRequest is prewarmBody as the client sends it.
func prewarmRequest(home string) client.PrewarmRequest {
	env := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}
	return client.PrewarmRequest{Shell: client.ShellInfo{Name: "bash", Path: "/bin/bash"}, Cwd: &home, Env: &env}
}

// exec runs req through the client and fails t if the server refused it.
func (s *testServer) exec(t *testing.T, req client.ExecRequest) *client.ExecResult {
	t.Helper()
	got, err := s.api(t).Exec(context.Background(), req)
	if err != nil {
		t.Fatalf("Exec(%q) = %v", req.Argv, err)
	}
	return got
}

// state is a receipt's state, or "" when it has none.
func state(r client.SnapshotReceipt) client.SnapshotReceiptState {
	if r.State == nil {
		return ""
	}
	return *r.State
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

	api := s.api(t)
	prewarm := make(chan error, 1)
	go func() {
		_, err := client.Result(api.PrewarmSnapshotWithResponse(context.Background(), scope, nil, prewarmRequest(home)))
		prewarm <- err
	}()
	waitFor(t, "the prewarm's capture to start", func() bool { return captures(home) == 1 })
	got := s.exec(t, snapshotRequest(home, "echo ran", scope))
	if string(got.StdoutData()) != "ran\n" || got.Snapshot.Outcome != client.SnapshotReceiptOutcomeFallback || state(got.Snapshot) != client.SnapshotReceiptStateOnDemand {
		t.Errorf("/exec during a failing prewarm = %q %+v, want ran fallback on_demand", got.StdoutData(), got.Snapshot)
	}
	if err, ok := errors.AsType[*client.Error](<-prewarm); !ok || err.Status != http.StatusBadGateway || err.Code != client.ProblemCodeCaptureFailed {
		t.Errorf("failing prewarm = %v, want 502 capture_failed", err)
	}
	e := s.scopeEntry(t, scope)
	if e.State != client.SnapshotEntryStateFailed || e.Attempts != 1 || e.RetryAt == nil {
		t.Errorf("entry after the first failure = %+v, want failed, attempts 1, retryAt", e)
	}
	if captures(home) != 2 {
		t.Errorf("captures = %d, want 2 (the prewarm's and the command's own)", captures(home))
	}

	// In backoff: no capture. After it: attempts 2 and 3, then exhausted.
	s.exec(t, snapshotRequest(home, "true", scope))
	if captures(home) != 2 {
		t.Errorf("a command during the backoff captured (captures = %d)", captures(home))
	}
	for attempt := 2; attempt <= 3; attempt++ {
		retryAt := s.scopeEntry(t, scope).RetryAt
		if retryAt == nil {
			t.Fatalf("attempt %d: the failed entry has no retryAt", attempt)
		}
		time.Sleep(time.Until(*retryAt) + 50*time.Millisecond)
		if r := s.exec(t, snapshotRequest(home, "true", scope)).Snapshot; r.Outcome != client.SnapshotReceiptOutcomeFallback {
			t.Errorf("attempt %d receipt = %+v, want fallback", attempt, r)
		}
		if e := s.scopeEntry(t, scope); e.Attempts != attempt {
			t.Errorf("attempt %d entry attempts = %d", attempt, e.Attempts)
		}
	}
	if e := s.scopeEntry(t, scope); e.State != client.SnapshotEntryStateExhausted {
		t.Errorf("entry after three failures = %v, want exhausted", e.State)
	}
	time.Sleep(1100 * time.Millisecond)
	s.exec(t, snapshotRequest(home, "true", scope))
	if captures(home) != 4 {
		t.Errorf("captures after the budget = %d, want 4", captures(home))
	}

	// Fixed profile and a DELETE: the next command uses a fresh snapshot.
	writeTestFile(t, rc, "printf x >> \"$HOME/captures\"\nprofile_helper() { printf recovered; }\n")
	if err := client.Check(api.ForgetSnapshotsWithResponse(context.Background(), scope)); err != nil {
		t.Errorf("DELETE /snapshots/%s = %v", scope, err)
	}
	got = s.exec(t, snapshotRequest(home, "profile_helper", scope))
	if got.Snapshot.Outcome != client.SnapshotReceiptOutcomeUsed || string(got.StdoutData()) != "recovered" {
		t.Errorf("after the fix = %+v %q, want used recovered", got.Snapshot, got.StdoutData())
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
		if got := s.exec(t, snapshotRequest(home, "helper", "edit")); string(got.StdoutData()) != "one\n" {
			t.Fatalf("helper printed %q, want one", got.StdoutData())
		}
	}
	if captures(home) != 1 {
		t.Errorf("an untouched profile was captured %d times, want 1", captures(home))
	}
	writeTestFile(t, rc, "printf x >> \"$HOME/captures\"\nhelper() { echo two; }\n")
	got := s.exec(t, snapshotRequest(home, "helper", "edit"))
	if string(got.StdoutData()) != "two\n" || state(got.Snapshot) != client.SnapshotReceiptStateOnDemand {
		t.Errorf("after the edit helper printed %q (%+v), want two from a fresh capture", got.StdoutData(), got.Snapshot)
	}
	if e := s.scopeEntry(t, "edit"); e.Attempts != 1 || e.State != client.SnapshotEntryStateReady {
		t.Errorf("recaptured entry = %+v, want a fresh ready entry", e)
	}
}

func TestRegistryNeverShowsValues(t *testing.T) {
	s := startServer(t, nil)
	home := t.TempDir()
	writeTestFile(t, filepath.Join(home, ".bashrc"), "export MY_API_TOKEN=s3cret\nexport PLAIN=visible-value\n")
	if got, err := client.Result(s.api(t).PrewarmSnapshotWithResponse(context.Background(), "secrets", nil, prewarmRequest(home))); err != nil || got.State != client.SnapshotEntryStateReady {
		t.Fatalf("prewarm = %+v %v", got, err)
	}
	for _, path := range []string{"/snapshots", "/snapshots/secrets", "/stats", "/metrics"} {
		_, body := s.get(t, path)
		for _, value := range []string{"s3cret", "visible-value"} {
			if strings.Contains(string(body), value) {
				t.Errorf("GET %s contains the value %q", path, value)
			}
		}
	}
	if names := s.scopeEntry(t, "secrets").EnvNames; !slices.Contains(names, "PLAIN") || !slices.Contains(names, "MY_API_TOKEN") {
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
