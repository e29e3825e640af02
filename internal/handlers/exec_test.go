package handlers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/service"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

func ptr[T any](v T) *T { return &v }

// TestExecTranslation: each field of an /exec body reaches the service as
// the domain spells it, and nothing is decided on the way.
func TestExecTranslation(t *testing.T) {
	tests := []struct {
		name string
		body string
		want service.ExecInput
	}{
		{"argv alone", `{"argv":["true"]}`, service.ExecInput{Argv: []string{"true"}}},
		{"every field", `{"processId":"p-9","argv":["/bin/bash","-lc","make"],"cwd":"/w","env":{"A":"1"},
			"envPolicy":{"inherit":"core","ignoreDefaultExcludes":true,"exclude":["X*"],"set":{"S":"v"},"includeOnly":["A*"]},
			"shellSnapshot":{"scopeId":"ws","shell":{"name":"bash","path":"/bin/bash"}},
			"stdin":"in","timeoutMs":1500,"idleTimeoutMs":250,"maxOutputBytes":64}`,
			service.ExecInput{
				ProcessID: "p-9", Argv: []string{"/bin/bash", "-lc", "make"}, Cwd: ptr("/w"), Env: map[string]string{"A": "1"},
				EnvPolicy: &envpolicy.Policy{Inherit: envpolicy.InheritCore, IgnoreDefaultExcludes: true, Exclude: []string{"X*"},
					Set: map[string]string{"S": "v"}, IncludeOnly: []string{"A*"}},
				Snapshot: &shellsnap.Request{ScopeID: "ws", Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}},
				Stdin:    []byte("in"), Timeout: 1500 * time.Millisecond, IdleTimeout: 250 * time.Millisecond, MaxOutputBytes: 64,
			}},
		{"policy inherits all by default", `{"argv":["true"],"envPolicy":{}}`,
			service.ExecInput{Argv: []string{"true"}, EnvPolicy: &envpolicy.Policy{Inherit: envpolicy.InheritAll}}},
		{"empty cwd is given", `{"argv":["true"],"cwd":""}`, service.ExecInput{Argv: []string{"true"}, Cwd: ptr("")}},
		{"empty stdin", `{"argv":["true"],"stdin":""}`, service.ExecInput{Argv: []string{"true"}, Stdin: []byte{}}},
		{"no output kept", `{"argv":["true"],"maxOutputBytes":0}`, service.ExecInput{Argv: []string{"true"}, MaxOutputBytes: exec.KeepNoOutput}},
		// A timeout too large for a duration must not wrap into a small or
		// negative one that passes the service's maximum.
		{"largest timeout", `{"argv":["true"],"timeoutMs":9223372036854775807}`, service.ExecInput{Argv: []string{"true"}, Timeout: 1<<63 - 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got service.ExecInput
			f := &fakeService{ExecFn: func(_ context.Context, in service.ExecInput) (service.ExecOutput, error) {
				got = in
				return service.ExecOutput{ProcessID: "p-1"}, nil
			}}
			if rec := serve(t, f, http.MethodPost, "/exec", tt.body, nil); rec.Code != http.StatusOK {
				t.Fatalf("POST /exec %s = %d %s", tt.body, rec.Code, rec.Body)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("POST /exec %s gave the service\n%+v\nwant\n%+v", tt.body, got, tt.want)
			}
		})
	}
}

// TestExecAnswers: what the service answers, as the client sees it.
func TestExecAnswers(t *testing.T) {
	code, three := 0, 3
	answer := func(out service.ExecOutput, err error) func() *fakeService {
		return func() *fakeService {
			return &fakeService{ExecFn: func(context.Context, service.ExecInput) (service.ExecOutput, error) { return out, err }}
		}
	}
	runHandlerCases(t, []handlerCase{
		{name: "exited", method: "POST", target: "/exec", body: `{"argv":["true"]}`,
			svc: answer(service.ExecOutput{ProcessID: "p-1", Pid: 42, Result: exec.Result{
				Status: exec.StatusExited, ExitCode: &code, Duration: 1500 * time.Millisecond,
				Stdout: exec.Output{Data: []byte("hi\n"), Total: 3}, Stderr: exec.Output{Data: []byte("\xff\xfe"), Total: 10, Truncated: true},
			}, Snapshot: shellsnap.Receipt{Outcome: shellsnap.OutcomeUsed, State: shellsnap.StateCacheHit, Wait: 250 * time.Microsecond, Standby: true}}, nil),
			status: 200, calls: []string{"Exec"},
			want: `{"processId":"p-1","pid":42,"status":"exited","exitCode":0,"signal":null,"durationMs":1500,
				"stdout":"hi\n","stdoutBytes":3,"stdoutTruncated":false,"stderrBase64":"//4=","stderrBytes":10,"stderrTruncated":true,
				"snapshot":{"outcome":"used","state":"cache_hit","waitMs":0.25,"standby":true}}`,
			check: func(t *testing.T, rec *httptest.ResponseRecorder) {
				if body := rec.Body.String(); strings.Contains(body, `"stderr":`) || strings.Contains(body, `"stdoutBase64"`) {
					t.Errorf("body %s has text and bytes of one stream, want one of them", body)
				}
			}},
		{name: "signaled", method: "POST", target: "/exec", body: `{"argv":["true"]}`,
			svc:    answer(service.ExecOutput{ProcessID: "p-1", Pid: 42, Result: exec.Result{Status: exec.StatusSignaled, Signal: "SIGKILL"}}, nil),
			status: 200, calls: []string{"Exec"},
			want: `{"status":"signaled","exitCode":null,"signal":"SIGKILL"}`},
		{name: "fallback says why", method: "POST", target: "/exec", body: `{"argv":["true"]}`,
			svc: answer(service.ExecOutput{ProcessID: "p-1", Result: exec.Result{Status: exec.StatusExited, ExitCode: &three},
				Snapshot: shellsnap.Receipt{Outcome: shellsnap.OutcomeFallback, State: shellsnap.StateOnDemand, Reason: "exit status: 7"}}, nil),
			status: 200, calls: []string{"Exec"},
			want: `{"exitCode":3,"snapshot":{"outcome":"fallback","state":"on_demand","reason":"exit status: 7","standby":false}}`},
		{name: "partial names what it left out", method: "POST", target: "/exec", body: `{"argv":["true"]}`,
			svc: answer(service.ExecOutput{ProcessID: "p-1", Result: exec.Result{Status: exec.StatusExited, ExitCode: &code},
				Snapshot: shellsnap.Receipt{Outcome: shellsnap.OutcomePartial, State: shellsnap.StateCacheHit,
					Unrestored: []shellsnap.Piece{{Kind: "function", Name: "broken"}, {Kind: "variable", Name: "odd"}}}}, nil),
			status: 200, calls: []string{"Exec"},
			want: `{"exitCode":0,"snapshot":{"outcome":"partial","state":"cache_hit",
				"unrestored":[{"kind":"function","name":"broken"},{"kind":"variable","name":"odd"}],"standby":false}}`},
		{name: "refused field", method: "POST", target: "/exec", body: `{"argv":["true"]}`,
			svc:    answer(service.ExecOutput{}, &service.FieldError{Field: "argv[1]", Reason: "argv[1] contains a NUL byte"}),
			status: 400, calls: []string{"Exec"},
			want: `{"code":"invalid_request","field":"argv[1]","detail":"argv[1] contains a NUL byte"}`},
		{name: "largest timeout refused", method: "POST", target: "/exec", body: `{"argv":["true"],"timeoutMs":9223372036854775807}`,
			svc: okExecutor, status: 400, calls: []string{"Exec"}, want: `{"code":"invalid_request","field":"timeoutMs"}`},
		{name: "integer with an exponent refused with its field", method: "POST", target: "/exec", body: `{"argv":["true"],"timeoutMs":1e3}`,
			svc: okExecutor, status: 400, want: `{"code":"invalid_request","field":"timeoutMs",
				"detail":"timeoutMs must be a whole number written without a fraction or an exponent (1000, not 1e3 or 1000.0)"}`},
		{name: "integer with a fraction refused with its field", method: "POST", target: "/exec", body: `{"argv":["true"],"maxOutputBytes":1000.0}`,
			svc: okExecutor, status: 400, want: `{"code":"invalid_request","field":"maxOutputBytes"}`},
		{name: "invalid scope", method: "POST", target: "/exec", body: `{"argv":["true"]}`,
			svc: answer(service.ExecOutput{}, shellsnap.ErrInvalidScope), status: 422, calls: []string{"Exec"},
			want: `{"code":"invalid_scope","field":"shellSnapshot.scopeId"}`},
		{name: "unsupported shell", method: "POST", target: "/exec", body: `{"argv":["true"]}`,
			svc: answer(service.ExecOutput{}, shellsnap.ErrUnsupportedShell), status: 422, calls: []string{"Exec"},
			want: `{"code":"unsupported_shell","field":"shellSnapshot.shell.name"}`},
		{name: "too many processes", method: "POST", target: "/exec", body: `{"argv":["true"]}`,
			svc: answer(service.ExecOutput{}, exec.ErrTooManyProcesses), status: 429, calls: []string{"Exec"},
			want: `{"code":"too_many_processes"}`,
			check: func(t *testing.T, rec *httptest.ResponseRecorder) {
				if got := rec.Header().Get("Retry-After"); got != "1" {
					t.Errorf("Retry-After = %q, want 1", got)
				}
			}},
		{name: "shutting down", method: "POST", target: "/exec", body: `{"argv":["true"]}`,
			svc: answer(service.ExecOutput{}, exec.ErrShuttingDown), status: 503, calls: []string{"Exec"},
			want: `{"code":"shutting_down"}`},
	})
}
