package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/snapexec/snapexec/internal/session/sessiontest"
)

// httpSession is a session of a real server, driven over HTTP.
type httpSession struct {
	s  *testServer
	id string
}

func (h httpSession) Run(t *testing.T, script string) (stdout, stderr string, kept bool, reason string) {
	t.Helper()
	code, out, _ := h.s.post(t, "/sessions/"+h.id+"/exec", map[string]any{"script": script, "timeoutMs": 60000})
	if code != http.StatusOK {
		t.Fatalf("POST /sessions/%s/exec = %d %v", h.id, code, out)
	}
	after, _ := out["session"].(map[string]any)
	stdout, _ = out["stdout"].(string)
	stderr, _ = out["stderr"].(string)
	kept, _ = after["stateKept"].(bool)
	reason, _ = after["reason"].(string)
	return stdout, stderr, kept, reason
}

// newHTTPSession returns what makes a session of shell over s's HTTP
// surface, for the differential sequences; it ends with the test.
func newHTTPSession(t *testing.T, s *testServer, name, path string) func(home string, env map[string]string) sessiontest.Session {
	return func(home string, env map[string]string) sessiontest.Session {
		code, out, _ := s.post(t, "/sessions", map[string]any{"shell": map[string]string{"name": name, "path": path}, "cwd": home, "env": env})
		if code != http.StatusCreated {
			t.Fatalf("POST /sessions = %d %v", code, out)
		}
		id := out["sessionId"].(string)
		t.Cleanup(func() { s.delete(t, "/sessions/"+id) })
		return httpSession{s, id}
	}
}

// TestSessionsOverHTTP is the differential test of sessions
// (internal/session/sessiontest) through the server's HTTP surface, on
// fewer sequences than the service's.
func TestSessionsOverHTTP(t *testing.T) {
	s := startServer(t, nil)
	for n := range 20 {
		ok := sessiontest.Sequence(t, n, newHTTPSession(t, s, "bash", "/bin/bash"))
		if !ok {
			t.FailNow()
		}
	}
}

// TestZshSessionsOverHTTP is zsh's differential test of sessions through
// the HTTP surface, on fewer sequences than the service's; an sh session is
// refused.
func TestZshSessionsOverHTTP(t *testing.T) {
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Fatalf("zsh is required by the session tests (make deps installs it): %v", err)
	}
	s := startServer(t, nil)
	for n := range 10 {
		ok := sessiontest.ZshSequence(t, n, zsh, newHTTPSession(t, s, "zsh", zsh))
		if !ok {
			t.FailNow()
		}
	}
	if code, out, _ := s.post(t, "/sessions", map[string]any{"shell": map[string]string{"name": "sh", "path": "/bin/sh"}}); code != http.StatusUnprocessableEntity || out["code"] != "unsupported_shell" || out["detail"] != "sessions support bash and zsh" {
		t.Errorf("an sh session = %d %v, want 422 unsupported_shell saying which shells sessions support", code, out)
	}
}

// TestSessionExecStreams: a session command streamed as /exec streams, its
// exit event carrying the session's state after it; a second command of
// the session while it runs is 409 session_busy; an unknown session 404.
func TestSessionExecStreams(t *testing.T) {
	s := startServer(t, nil)
	home := t.TempDir()
	if code, out, _ := s.post(t, "/sessions", map[string]any{"sessionId": "st", "shell": map[string]string{"name": "bash", "path": "/bin/bash"}, "cwd": home}); code != http.StatusCreated {
		t.Fatalf("POST /sessions = %d %v", code, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/sessions/st/exec",
		strings.NewReader(`{"script":"echo one; cd /tmp; export SEEN=1; read -r line; echo two"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := readEvents(t, resp, func(sseEvent) bool { return false })
	last := events[len(events)-1]
	if last.event != "exit" {
		t.Fatalf("events %v, want an exit event last", events)
	}
	var exit struct {
		Status  string `json:"status"`
		Session struct {
			Cwd       string `json:"cwd"`
			StateKept bool   `json:"stateKept"`
			Variables struct {
				Added []string `json:"added"`
			} `json:"variables"`
		} `json:"session"`
	}
	if err := json.Unmarshal([]byte(last.data), &exit); err != nil {
		t.Fatal(err)
	}
	if exit.Status != "exited" || !exit.Session.StateKept || exit.Session.Cwd != "/tmp" || !strings.Contains(strings.Join(exit.Session.Variables.Added, " "), "SEEN") {
		t.Errorf("exit event %s", last.data)
	}
	if code, out, _ := s.post(t, "/sessions/nope/exec", map[string]any{"script": "true"}); code != http.StatusNotFound || out["code"] != "not_found" {
		t.Errorf("unknown session = %d %v", code, out)
	}
	code, body := s.get(t, "/sessions/st")
	if code != http.StatusOK || !strings.Contains(string(body), `"cwd":"/tmp"`) {
		t.Errorf("GET /sessions/st = %d %s", code, body)
	}
}

// TestSessionEmptyScopeIsRefused: a session asked from the snapshot of the
// empty scope is 422 invalid_scope, as /exec's is, and no session is made;
// without shellSnapshot it starts from a bare shell.
func TestSessionEmptyScopeIsRefused(t *testing.T) {
	s := startServer(t, nil)
	home := t.TempDir()
	shell := map[string]string{"name": "bash", "path": "/bin/bash"}
	env := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}
	code, out, _ := s.post(t, "/sessions", map[string]any{"shell": shell, "cwd": home, "env": env, "shellSnapshot": map[string]string{"scopeId": ""}})
	if code != http.StatusUnprocessableEntity || out["code"] != "invalid_scope" || out["field"] != "shellSnapshot.scopeId" {
		t.Errorf("POST /sessions with scopeId \"\" = %d %v, want 422 invalid_scope on shellSnapshot.scopeId", code, out)
	}
	if _, body := s.get(t, "/sessions"); !strings.Contains(string(body), `"sessions":[]`) {
		t.Errorf("GET /sessions after the refusal = %s, want none", body)
	}
	code, out, _ = s.post(t, "/sessions", map[string]any{"shell": shell, "cwd": home, "env": env})
	if code != http.StatusCreated {
		t.Errorf("POST /sessions without shellSnapshot = %d %v, want 201", code, out)
	}
}
