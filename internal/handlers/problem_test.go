package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/sandbox"
	"github.com/snapexec/snapexec/internal/service"
)

func TestProblemResponses(t *testing.T) {
	internalErr := &fakeService{ExecFn: func(context.Context, service.ExecInput) (service.ExecOutput, error) {
		return service.ExecOutput{}, errors.New("secret internal detail /var/lib/x")
	}}
	spawnErr := &fakeService{ExecFn: func(context.Context, service.ExecInput) (service.ExecOutput, error) {
		return service.ExecOutput{}, fmt.Errorf("%w: nope: not found", exec.ErrSpawn)
	}}
	cwdErr := &fakeService{ExecFn: func(context.Context, service.ExecInput) (service.ExecOutput, error) {
		return service.ExecOutput{}, fmt.Errorf("%w: /x", exec.ErrCwdNotFound)
	}}
	failWith := func(err error) *fakeService {
		return &fakeService{ExecFn: func(context.Context, service.ExecInput) (service.ExecOutput, error) { return service.ExecOutput{}, err }}
	}
	tests := []struct {
		name        string
		ex          *fakeService
		method      string
		path        string
		contentType string
		body        string
		wantStatus  int
		wantCode    string
		wantField   string
	}{
		{"malformed JSON", okExecutor(), "POST", "/exec", "application/json", `{"argv":`, 400, "invalid_request", "body"},
		{"not an object", okExecutor(), "POST", "/exec", "application/json", `[1,2]`, 400, "invalid_request", "body"},
		{"unknown field", okExecutor(), "POST", "/exec", "application/json", `{"argv":["true"],"argz":1}`, 400, "invalid_request", "argz"},
		{"wrong type argv", okExecutor(), "POST", "/exec", "application/json", `{"argv":"true"}`, 400, "invalid_request", "argv"},
		{"wrong type element", okExecutor(), "POST", "/exec", "application/json", `{"argv":[1]}`, 400, "invalid_request", "argv[0]"},
		{"wrong type env value", okExecutor(), "POST", "/exec", "application/json", `{"argv":["true"],"env":{"A":1}}`, 400, "invalid_request", `env["A"]`},
		{"wrong type timeout", okExecutor(), "POST", "/exec", "application/json", `{"argv":["true"],"timeoutMs":"5"}`, 400, "invalid_request", "timeoutMs"},
		{"fractional timeout", okExecutor(), "POST", "/exec", "application/json", `{"argv":["true"],"timeoutMs":1.5}`, 400, "invalid_request", "timeoutMs"},
		{"zero timeout", okExecutor(), "POST", "/exec", "application/json", `{"argv":["true"],"timeoutMs":0}`, 400, "invalid_request", "timeoutMs"},
		{"timeout above max", okExecutor(), "POST", "/exec", "application/json", `{"argv":["true"],"timeoutMs":60001}`, 400, "invalid_request", "timeoutMs"},
		{"empty argv", okExecutor(), "POST", "/exec", "application/json", `{"argv":[]}`, 400, "invalid_request", "argv"},
		{"missing argv", okExecutor(), "POST", "/exec", "application/json", `{}`, 400, "invalid_request", "argv"},
		{"empty program", okExecutor(), "POST", "/exec", "application/json", `{"argv":[""]}`, 400, "invalid_request", "argv[0]"},
		{"relative cwd", okExecutor(), "POST", "/exec", "application/json", `{"argv":["true"],"cwd":"tmp"}`, 400, "invalid_request", "cwd"},
		{"env name with =", okExecutor(), "POST", "/exec", "application/json", `{"argv":["true"],"env":{"A=B":"1"}}`, 400, "invalid_request", `env["A=B"]`},
		{"env value with NUL", okExecutor(), "POST", "/exec", "application/json", `{"argv":["true"],"env":{"A":"\u0000"}}`, 400, "invalid_request", `env["A"]`},
		{"no body", okExecutor(), "POST", "/exec", "application/json", ``, 400, "invalid_request", ""},
		{"text/plain body", okExecutor(), "POST", "/exec", "text/plain", `{"argv":["true"]}`, 415, "unsupported_media_type", "Content-Type"},
		{"form body", okExecutor(), "POST", "/exec", "application/x-www-form-urlencoded", `{"argv":["true"]}`, 415, "unsupported_media_type", "Content-Type"},
		{"unknown path", okExecutor(), "GET", "/nope", "", ``, 404, "not_found", ""},
		{"wrong method", okExecutor(), "GET", "/exec", "", ``, 405, "method_not_allowed", ""},
		{"spawn failed", spawnErr, "POST", "/exec", "application/json", `{"argv":["nope"]}`, 422, "spawn_failed", "argv"},
		{"shell cannot start", failWith(&service.ProgramError{Field: "shell.path", Err: fmt.Errorf("%w: /nope", exec.ErrSpawn)}), "POST", "/exec", "application/json", `{"argv":["true"]}`, 422, "spawn_failed", "shell.path"},
		{"cwd not found", cwdErr, "POST", "/exec", "application/json", `{"argv":["true"],"cwd":"/x"}`, 422, "cwd_not_found", "cwd"},
		{"internal error", internalErr, "POST", "/exec", "application/json", `{"argv":["true"]}`, 500, "internal", ""},
		{"stdin closed", failWith(fmt.Errorf("%w: broken pipe", exec.ErrStdinClosed)), "POST", "/exec", "application/json", `{"argv":["true"]}`, 409, "stdin_closed", ""},
		{"process exited", failWith(exec.ErrProcessExited), "POST", "/exec", "application/json", `{"argv":["true"]}`, 409, "process_exited", ""},
		{"sandbox unavailable", failWith(&sandbox.UnavailableError{Missing: []string{"Landlock ABI 6 or later"}}), "POST", "/exec", "application/json", `{"argv":["true"],"sandbox":{"readOnly":true}}`, 422, "sandbox_unavailable", "sandbox"},
		{"sandbox root missing", failWith(&sandbox.FieldError{Field: "sandbox.writableRoots[0]", Reason: "does not exist"}), "POST", "/exec", "application/json", `{"argv":["true"],"sandbox":{"writableRoots":["/x"]}}`, 400, "invalid_request", "sandbox.writableRoots[0]"},
		{"sandbox network unknown", okExecutor(), "POST", "/exec", "application/json", `{"argv":["true"],"sandbox":{"network":"some"}}`, 400, "invalid_request", "sandbox.network"},
		{"sandbox field unknown", okExecutor(), "POST", "/exec", "application/json", `{"argv":["true"],"sandbox":{"writable":["/x"]}}`, 400, "invalid_request", "sandbox.writable"},
		{"sandbox too many roots", okExecutor(), "POST", "/exec", "application/json", `{"argv":["true"],"sandbox":{"writableRoots":[` + strings.Repeat(`"/a",`, 64) + `"/a"]}}`, 400, "invalid_request", "sandbox.writableRoots"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs strings.Builder
			h := newTestRouter(t, tt.ex, &logs)
			req := localRequest(tt.method, tt.path, strings.NewReader(tt.body))
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			got := decodeProblem(t, rec)
			if rec.Code != tt.wantStatus || got.Code != ProblemCode(tt.wantCode) || got.Status != tt.wantStatus {
				t.Errorf("%s %s %s = %d %q (status field %d), want %d %q", tt.method, tt.path, tt.body, rec.Code, got.Code, got.Status, tt.wantStatus, tt.wantCode)
			}
			if field := deref(got.Field); field != tt.wantField {
				t.Errorf("%s %s %s field = %q, want %q", tt.method, tt.path, tt.body, field, tt.wantField)
			}
			if got.RequestId == "" || got.RequestId != rec.Header().Get("X-Request-Id") {
				t.Errorf("problem requestId %q, header %q, want equal and set", got.RequestId, rec.Header().Get("X-Request-Id"))
			}
			if strings.Contains(rec.Body.String(), "secret internal detail") {
				t.Errorf("internal error text reached the client: %s", rec.Body)
			}
		})
	}
}

func TestValidationNeverLogsValues(t *testing.T) {
	var logs strings.Builder
	h := newTestRouter(t, okExecutor(), &logs)
	req := localRequest("POST", "/exec", strings.NewReader(`{"argv":["true"],"env":{"TOKEN":"hunter2-value"},"bogus":1}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 400 {
		t.Fatalf("status = %d, want 400", rec.Code)
	}
	if strings.Contains(logs.String(), "hunter2-value") || strings.Contains(rec.Body.String(), "hunter2-value") {
		t.Errorf("an env value reached the log or the client:\nlog: %s\nbody: %s", logs.String(), rec.Body)
	}
}

func TestParameterErrorHook(t *testing.T) {
	rec := httptest.NewRecorder()
	req := localRequest("GET", "/processes/x", nil)
	parameterError(rec, req, &InvalidParamFormatError{ParamName: "afterSeq", Err: errors.New("strconv: bad")})
	got := decodeProblem(t, rec)
	if rec.Code != 400 || got.Code != InvalidRequest || deref(got.Field) != "afterSeq" {
		t.Errorf("parameterError = %d %q %q, want 400 invalid_request afterSeq", rec.Code, got.Code, deref(got.Field))
	}
	if strings.Contains(rec.Body.String(), "strconv") {
		t.Errorf("binding error text reached the client: %s", rec.Body)
	}
}

func TestRequestDecodeErrorHook(t *testing.T) {
	rec := httptest.NewRecorder()
	requestDecodeError(rec, localRequest("POST", "/exec", nil), errors.New("json: cannot unmarshal internal"))
	got := decodeProblem(t, rec)
	if rec.Code != 400 || got.Code != InvalidRequest || strings.Contains(rec.Body.String(), "unmarshal") {
		t.Errorf("requestDecodeError = %d %q %s, want 400 invalid_request without the cause", rec.Code, got.Code, rec.Body)
	}
}

func TestRequestIDIsEchoedWhenSane(t *testing.T) {
	h := newTestRouter(t, okExecutor(), io.Discard)
	for _, tt := range []struct{ in, want string }{{"abc-123", "abc-123"}, {"has space", ""}, {strings.Repeat("x", 200), ""}} {
		req := localRequest("GET", "/healthz", nil)
		req.Header.Set("X-Request-Id", tt.in)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		got := rec.Header().Get("X-Request-Id")
		if tt.want != "" && got != tt.want || tt.want == "" && (got == tt.in || got == "") {
			t.Errorf("X-Request-Id %q echoed as %q, want %q (or a fresh one when empty)", tt.in, got, tt.want)
		}
	}
}

// localRequest is an httptest request sent to a loopback Host, as a local
// client sends it.
func localRequest(method, target string, body io.Reader) *http.Request {
	r := httptest.NewRequest(method, target, body)
	r.Host = "127.0.0.1:8080"
	return r
}

func decodeProblem(t *testing.T, rec *httptest.ResponseRecorder) Problem {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q (body %s), want application/problem+json", ct, rec.Body)
	}
	var p Problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatalf("problem body %q: %v", rec.Body, err)
	}
	if p.Type == "" || p.Title == "" {
		t.Errorf("problem %+v lacks type or title", p)
	}
	return p
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestMaxOutputBytesTranslation: an explicit 0 keeps no output, which the
// domain spells KeepNoOutput since its zero is the server's default, as an
// absent field is.
func TestMaxOutputBytesTranslation(t *testing.T) {
	tests := []struct {
		name string
		body string
		want int
	}{
		{"absent", `{"argv":["true"]}`, 0},
		{"zero", `{"argv":["true"],"maxOutputBytes":0}`, exec.KeepNoOutput},
		{"some", `{"argv":["true"],"maxOutputBytes":5}`, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := -2
			ex := &fakeService{ExecFn: func(_ context.Context, in service.ExecInput) (service.ExecOutput, error) {
				got = in.MaxOutputBytes
				return okExecutor().ExecFn(context.Background(), in)
			}}
			req := localRequest("POST", "/exec", strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			newTestRouter(t, ex, io.Discard).ServeHTTP(rec, req)
			if rec.Code != http.StatusOK || got != tt.want {
				t.Errorf("POST /exec %s = %d, MaxOutputBytes %d; want 200, %d", tt.body, rec.Code, got, tt.want)
			}
		})
	}
}
