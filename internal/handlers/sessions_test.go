package handlers

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/sandbox"
	"github.com/snapexec/snapexec/internal/service"
	"github.com/snapexec/snapexec/internal/session"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

func TestSessionTranslation(t *testing.T) {
	var gotCreate service.SessionInput
	var gotExec service.SessionExecInput
	var gotFork string
	info := session.Info{ID: "s1", Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Cwd: "/w", Sandbox: sandbox.Policy{WritableRoots: []string{"/w"}, Network: sandbox.NetworkNone}}
	f := &fakeService{
		CreateSessionFn: func(_ context.Context, in service.SessionInput) (session.Info, error) {
			gotCreate = in
			return info, nil
		},
		SessionExecFn: func(_ context.Context, _ string, in service.SessionExecInput) (service.SessionExecOutput, error) {
			gotExec = in
			return service.SessionExecOutput{ExecOutput: service.ExecOutput{ProcessID: "p-1", Result: exec.Result{Status: exec.StatusExited}}}, nil
		},
		ForkSessionFn: func(_, forkID string) (session.Info, error) { gotFork = forkID; return info, nil },
	}
	rec := serve(t, f, http.MethodPost, "/sessions", `{"sessionId":"s1","shell":{"name":"bash","path":"/bin/bash"},"cwd":"/w","env":{"A":"1"},"shellSnapshot":{"scopeId":"ws"},"sandbox":{"writableRoots":["/w"],"network":"none"}}`, nil)
	if rec.Code != http.StatusCreated {
		t.Fatalf("POST /sessions = %d %s", rec.Code, rec.Body)
	}
	want := service.SessionInput{SessionID: "s1", Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Cwd: ptr("/w"), Env: map[string]string{"A": "1"}, ScopeID: ptr("ws"),
		Sandbox: &sandbox.Policy{WritableRoots: []string{"/w"}, Network: sandbox.NetworkNone}}
	if !reflect.DeepEqual(gotCreate, want) {
		t.Errorf("POST /sessions gave %+v, want %+v", gotCreate, want)
	}
	// A scope given empty is the service's to refuse, not the absent scope.
	for body, want := range map[string]*string{
		`{"shell":{"name":"bash","path":"/bin/bash"},"shellSnapshot":{"scopeId":""}}`: ptr(""),
		`{"shell":{"name":"bash","path":"/bin/bash"}}`:                                nil,
	} {
		if rec := serve(t, f, http.MethodPost, "/sessions", body, nil); rec.Code != http.StatusCreated || !reflect.DeepEqual(gotCreate.ScopeID, want) {
			t.Errorf("POST /sessions %s = %d, scope %v; want 201, scope %v", body, rec.Code, gotCreate.ScopeID, want)
		}
	}
	if !strings.Contains(rec.Body.String(), `"sandbox":{"network":"none","writableRoots":["/w"]}`) {
		t.Errorf("POST /sessions answered %s, want the session's sandbox", rec.Body)
	}
	rec = serve(t, f, http.MethodPost, "/sessions/s1/exec", `{"script":"cd /","stdin":"x","timeoutMs":1500,"idleTimeoutMs":20,"maxOutputBytes":0}`, nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("POST /sessions/s1/exec = %d %s", rec.Code, rec.Body)
	}
	wantExec := service.SessionExecInput{Script: "cd /", Stdin: []byte("x"), Timeout: 1500 * time.Millisecond, IdleTimeout: 20 * time.Millisecond, MaxOutputBytes: exec.KeepNoOutput}
	if !reflect.DeepEqual(gotExec, wantExec) {
		t.Errorf("exec gave %+v, want %+v", gotExec, wantExec)
	}
	if rec := serve(t, f, http.MethodPost, "/sessions/s1/fork", `{"sessionId":"s2"}`, nil); rec.Code != http.StatusCreated || gotFork != "s2" {
		t.Errorf("fork = %d %s, id %q", rec.Code, rec.Body, gotFork)
	}
	if rec := serve(t, f, http.MethodPost, "/sessions/s1/fork", ``, nil); rec.Code != http.StatusCreated || gotFork != "" {
		t.Errorf("fork without a body = %d %s, id %q", rec.Code, rec.Body, gotFork)
	}
}

func TestSessionAnswers(t *testing.T) {
	code := 3
	started := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	info := session.Info{
		ID: "s1", Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Cwd: "/tmp", ForkedFrom: "s0", CreatedAt: started, LastUsedAt: started,
		Commands: 1, StateBytes: 99, Variables: []string{"FOO"},
		History: []session.Command{{ProcessID: "p-1", Script: "exit 3", Status: exec.StatusExited, ExitCode: &code, StateKept: true, StartedAt: started, Duration: 9 * time.Millisecond}},
	}
	withInfo := func() *fakeService {
		return &fakeService{SessionFn: func(string) (session.Info, error) { return info, nil }}
	}
	fails := func(err error) func() *fakeService {
		return func() *fakeService {
			return &fakeService{
				SessionExecFn: func(context.Context, string, service.SessionExecInput) (service.SessionExecOutput, error) {
					return service.SessionExecOutput{}, err
				},
				SessionFn:       func(string) (session.Info, error) { return session.Info{}, err },
				DeleteSessionFn: func(string) error { return err },
			}
		}
	}
	runHandlerCases(t, []handlerCase{
		{name: "exec answers /exec's fields and the state after", method: "POST", target: "/sessions/s1/exec", body: `{"script":"exit 3"}`,
			svc: func() *fakeService {
				return &fakeService{SessionExecFn: func(context.Context, string, service.SessionExecInput) (service.SessionExecOutput, error) {
					return service.SessionExecOutput{
						ExecOutput: service.ExecOutput{ProcessID: "p-1", Pid: 7, Result: exec.Result{Status: exec.StatusExited, ExitCode: &code, Stdout: exec.Output{Data: []byte("hi\n"), Total: 3}},
							Sandbox: sandbox.Report{Type: sandbox.TypeLandlock, ABI: 7, ReadOnlyMounts: true}},
						Session: session.Outcome{StateKept: true, Cwd: "/tmp", Changes: shellsnap.SessionChanges{
							Variables: shellsnap.NameChanges{Added: []string{"FOO"}, Removed: []string{"BAR"}},
						}},
					}, nil
				}}
			},
			status: 200, calls: []string{"SessionExec s1"},
			want: `{"processId":"p-1","pid":7,"status":"exited","exitCode":3,"stdout":"hi\n","snapshot":{"outcome":""},
				"sandbox":{"type":"landlock","abi":7,"readOnlyMounts":true},
				"session":{"sessionId":"s1","cwd":"/tmp","stateKept":true,"variables":{"added":["FOO"],"changed":[],"removed":["BAR"]},
				"functions":{"added":[],"changed":[],"removed":[]}}}`},
		{name: "get", method: "GET", target: "/sessions/s1", svc: withInfo, status: 200, calls: []string{"Session s1"},
			want: `{"sessionId":"s1","cwd":"/tmp","forkedFrom":"s0","commands":1,"stateBytes":99,"variables":["FOO"],"functions":[],
				"history":[{"processId":"p-1","script":"exit 3","status":"exited","exitCode":3,"signal":null,"stateKept":true,"durationMs":9}]}`},
		{name: "unknown session", method: "GET", target: "/sessions/nope", svc: fails(session.ErrNotFound), status: 404,
			calls: []string{"Session nope"}, want: `{"code":"not_found"}`},
		{name: "busy", method: "POST", target: "/sessions/s1/exec", body: `{"script":"true"}`, svc: fails(session.ErrBusy), status: 409,
			calls: []string{"SessionExec s1"}, want: `{"code":"session_busy"}`},
		{name: "too many", method: "POST", target: "/sessions/s1/exec", body: `{"script":"true"}`, svc: fails(session.ErrTooMany), status: 429,
			calls: []string{"SessionExec s1"}, want: `{"code":"too_many_sessions"}`},
		{name: "delete unknown", method: "DELETE", target: "/sessions/nope", svc: fails(session.ErrNotFound), status: 404,
			calls: []string{"DeleteSession nope"}, want: `{"code":"not_found"}`},
		{name: "no script", method: "POST", target: "/sessions/s1/exec", body: `{}`, svc: fails(nil), status: 400, want: `{"code":"invalid_request"}`},
	})
}
