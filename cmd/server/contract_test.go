package main

// Promises of api/openapi.yaml that no schema check can see, held against the
// real server: which operations need the token, and one name for each signal
// in requests and in results.

import (
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/snapexec/snapexec/api"
)

// TestContractSecurity checks that the operations the contract marks public
// (security: []) answer without the token and that every other one answers
// 401, so a generated client sends the token exactly where it is needed.
func TestContractSecurity(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	scheme := doc.Components.SecuritySchemes["bearerAuth"]
	if scheme == nil || scheme.Value.Type != "http" || scheme.Value.Scheme != "bearer" {
		t.Fatalf("components.securitySchemes.bearerAuth = %+v, want an http bearer scheme", scheme)
	}
	if len(doc.Security) != 1 || doc.Security[0]["bearerAuth"] == nil {
		t.Fatalf("global security = %v, want bearerAuth", doc.Security)
	}
	file := filepath.Join(t.TempDir(), "token")
	writeTestFile(t, file, testToken+"\n")
	s := startServer(t, nil, "--token-file", file)
	params := strings.NewReplacer("{processId}", "p-none", "{scopeId}", "none")
	var public []string
	for _, path := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(path).Operations() {
			name := method + " " + path
			open := op.Security != nil && len(*op.Security) == 0
			if open {
				public = append(public, name)
			}
			code, body, hdr := s.do(t, method, params.Replace(path), "", nil)
			switch {
			case open && code == http.StatusUnauthorized:
				t.Errorf("%s without the token = 401, but the contract marks it public", name)
			case !open && (code != http.StatusUnauthorized || !strings.Contains(body, `"unauthorized"`) || hdr.Get("WWW-Authenticate") == ""):
				t.Errorf("%s without the token = %d %s, want 401 unauthorized with WWW-Authenticate", name, code, body)
			}
		}
	}
	slices.Sort(public)
	if want := []string{"GET /healthz", "GET /readyz"}; !slices.Equal(public, want) {
		t.Errorf("public operations = %v, want %v", public, want)
	}
}

// TestSignalNames checks that a request may name a signal as a result names
// it (and by the older words), and that the result then names that signal.
func TestSignalNames(t *testing.T) {
	s := startServer(t, nil)
	tests := []struct{ send, want string }{
		{"SIGINT", "SIGINT"},
		{"SIGTERM", "SIGTERM"},
		{"SIGKILL", "SIGKILL"},
		{"SIGHUP", "SIGHUP"},
		{"interrupt", "SIGINT"},
		{"terminate", "SIGTERM"},
		{"kill", "SIGKILL"},
		{"hangup", "SIGHUP"},
	}
	for _, tt := range tests {
		t.Run(tt.send, func(t *testing.T) {
			id := s.startProcess(t, map[string]any{"argv": []string{"sleep", "30"}})["processId"].(string)
			if code, got, _ := s.post(t, "/processes/"+id+"/signal", map[string]any{"signal": tt.send}); code != http.StatusOK || got["delivered"] != true {
				t.Fatalf("signal %s = %d %v, want 200 delivered", tt.send, code, got)
			}
			if got := s.waitStatus(t, id, "signaled"); got["signal"] != tt.want {
				t.Errorf("process signalled with %s ended by %v, want %s", tt.send, got["signal"], tt.want)
			}
		})
	}
	id := s.startProcess(t, map[string]any{"argv": []string{"sleep", "30"}})["processId"].(string)
	if code, got, _ := s.post(t, "/processes/"+id+"/signal", map[string]any{"signal": "SIGSEGV"}); code != http.StatusBadRequest || got["code"] != "invalid_request" {
		t.Errorf("signal SIGSEGV = %d %v, want 400 invalid_request", code, got)
	}
	if got := s.process(t, id); got["status"] != "running" {
		t.Errorf("after a refused signal the process is %v, want running", got["status"])
	}
}
