package handlers

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/service"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// readyEntry is a ready entry whose policy sets a secret.
func readyEntry(scope string) shellsnap.EntryInfo {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	return shellsnap.EntryInfo{
		Key: "k-1", ScopeID: scope, Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Cwd: "/w",
		Policy: &envpolicy.Policy{Inherit: envpolicy.InheritCore, Set: map[string]string{"B_SET": "set-secret", "A_SET": "x"}},
		State:  shellsnap.EntryReady, Attempts: 1, MaxAttempts: 3, CapturedAt: at, CaptureTime: 12500 * time.Microsecond,
		LastUsedAt: at, StateBytes: 99, EnvNames: []string{"PLAIN"}, FunctionCount: 2, AliasCount: 1, OptionCount: 3, Hits: 4,
		Unrestored: []shellsnap.Piece{{Kind: "function", Name: "a=b"}},
	}
}

// TestSnapshotHandlers: the registry's routes over a fake cache: its
// entries as the contract shows them (names, never values), the scope's, a
// forget, and a prewarm that waits (200) or not (202), with its errors.
func TestSnapshotHandlers(t *testing.T) {
	failed := shellsnap.EntryInfo{ScopeID: "bad", Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Terminal: true, State: shellsnap.EntryFailed,
		Attempts: 1, MaxAttempts: 3, RetryAt: time.Date(2026, 12, 1, 10, 0, 1, 0, time.UTC),
		LastError: &shellsnap.CaptureError{Reason: shellsnap.ReasonTimeout, Message: "shell snapshot capture timed out"}}
	registry := func() *fakeService {
		return &fakeService{
			SnapshotsFn: func() []shellsnap.EntryInfo { return []shellsnap.EntryInfo{readyEntry("ws"), failed} },
			ScopeSnapshotsFn: func(scope string) ([]shellsnap.EntryInfo, error) {
				if scope != "ws" {
					return nil, service.ErrNotFound
				}
				return []shellsnap.EntryInfo{readyEntry("ws")}, nil
			},
			ForgetSnapshotsFn: func(string) {},
			PrewarmFn: func(_ context.Context, in service.PrewarmInput) (shellsnap.EntryInfo, error) {
				switch in.ScopeID {
				case "fails":
					return shellsnap.EntryInfo{}, &shellsnap.CaptureError{Reason: shellsnap.ReasonNonzeroExit, Message: "exit status: 7"}
				case "nowhere":
					return shellsnap.EntryInfo{}, fmt.Errorf("%w: /nope", exec.ErrCwdNotFound)
				case "x" + strings.Repeat("y", shellsnap.MaxScopeBytes):
					return shellsnap.EntryInfo{}, shellsnap.ErrInvalidScope
				case "fish":
					return shellsnap.EntryInfo{}, shellsnap.ErrUnsupportedShell
				}
				if !in.Wait {
					return shellsnap.EntryInfo{ScopeID: in.ScopeID, Shell: in.Shell, State: shellsnap.EntryPending, MaxAttempts: 3}, nil
				}
				return readyEntry(in.ScopeID), nil
			},
		}
	}
	body := `{"shell":{"name":"bash","path":"/bin/bash"}}`
	runHandlerCases(t, []handlerCase{
		{name: "list", method: "GET", target: "/snapshots", svc: registry, status: 200, calls: []string{"Snapshots"},
			want: `{"capacity":` + strconv.Itoa(shellsnap.MaxCachedSnapshots) + `,"entries":[
				{"key":"k-1","scopeId":"ws","shell":{"name":"bash","path":"/bin/bash"},"cwd":"/w","terminal":false,"state":"ready",
				 "envPolicy":{"inherit":"core","ignoreDefaultExcludes":false,"setNames":["A_SET","B_SET"]},
				 "attempts":1,"maxAttempts":3,"captureMs":12.5,"capturedAt":"2026-12-01T10:00:00Z","stateBytes":99,
				 "envNames":["PLAIN"],"envCount":1,"functionCount":2,"aliasCount":1,"optionCount":3,"hits":4},
				{"scopeId":"bad","terminal":true,"state":"failed","retryAt":"2026-12-01T10:00:01Z","envNames":[],"envCount":0,
				 "lastError":{"reason":"timeout","message":"shell snapshot capture timed out"}}]}`,
			check: func(t *testing.T, rec *httptest.ResponseRecorder) {
				if strings.Contains(rec.Body.String(), "set-secret") {
					t.Errorf("GET /snapshots = %s shows a value of envPolicy.set", rec.Body)
				}
				if n := strings.Count(rec.Body.String(), `"captureMs"`); n != 1 {
					t.Errorf("GET /snapshots = %s gives %d capture times, want one: the failed entry was never captured", rec.Body, n)
				}
			}},
		{name: "scope", method: "GET", target: "/snapshots/ws", svc: registry, status: 200, calls: []string{"ScopeSnapshots ws"},
			want: `{"entries":[{"scopeId":"ws","state":"ready","unrestored":[{"kind":"function","name":"a=b"}]}]}`},
		{name: "unknown scope", method: "GET", target: "/snapshots/none-such", svc: registry, status: 404,
			calls: []string{"ScopeSnapshots none-such"}, want: `{"code":"not_found"}`},
		{name: "forget", method: "DELETE", target: "/snapshots/ws", svc: registry, status: 204, calls: []string{"ForgetSnapshots ws"}},
		{name: "prewarm", method: "POST", target: "/snapshots/ws/prewarm", body: body, svc: registry, status: 200,
			calls: []string{"Prewarm ws"}, want: `{"scopeId":"ws","state":"ready"}`},
		// cmd/server's TestPrewarmWithoutWait, the HTTP half.
		{name: "prewarm without waiting", method: "POST", target: "/snapshots/ws/prewarm?wait=false", body: body, svc: registry,
			status: 202, calls: []string{"Prewarm ws"}, want: `{"scopeId":"ws","state":"pending"}`},
		{name: "prewarm whose capture fails", method: "POST", target: "/snapshots/fails/prewarm", body: body, svc: registry,
			status: 502, calls: []string{"Prewarm fails"}, want: `{"code":"capture_failed","detail":"nonzero_exit: exit status: 7"}`},
		{name: "prewarm in a missing cwd", method: "POST", target: "/snapshots/nowhere/prewarm", body: `{"shell":{"name":"bash","path":"/bin/bash"},"cwd":"/nope"}`,
			svc: registry, status: 422, calls: []string{"Prewarm nowhere"}, want: `{"code":"cwd_not_found","field":"cwd"}`},
		// The problem table names an exec's fields (shellSnapshot.*); a
		// prewarm's are its path's and its body's.
		{name: "prewarm of a scope too long", method: "POST", target: "/snapshots/x" + strings.Repeat("y", shellsnap.MaxScopeBytes) + "/prewarm", body: body,
			svc: registry, status: 422, calls: []string{"Prewarm x" + strings.Repeat("y", shellsnap.MaxScopeBytes)}, want: `{"code":"invalid_scope","field":"scopeId"}`},
		{name: "prewarm of an unsupported shell", method: "POST", target: "/snapshots/fish/prewarm", body: `{"shell":{"name":"fish","path":"/usr/bin/fish"}}`,
			svc: registry, status: 422, calls: []string{"Prewarm fish"}, want: `{"code":"unsupported_shell","field":"shell.name"}`},
		{name: "prewarm refused by the contract", method: "POST", target: "/snapshots/ws/prewarm", body: `{"shell":{"name":"bash"}}`,
			svc: registry, status: 400, want: `{"code":"invalid_request"}`},
	})
}

// TestPrewarmTranslation: a prewarm's body and parameters reach the service
// as its PrewarmInput; the service validates it.
func TestPrewarmTranslation(t *testing.T) {
	tests := []struct {
		name, target, body string
		want               service.PrewarmInput
	}{
		{"shell alone", "/snapshots/ws/prewarm", `{"shell":{"name":"zsh","path":"/bin/zsh"}}`,
			service.PrewarmInput{ScopeID: "ws", Shell: shellsnap.Shell{Name: "zsh", Path: "/bin/zsh"}, Wait: true}},
		{"every field", "/snapshots/ws/prewarm?wait=false", `{"shell":{"name":"bash","path":"/bin/bash"},"cwd":"/w","env":{"HOME":"/w"},"envPolicy":{"exclude":["X"]}}`,
			service.PrewarmInput{ScopeID: "ws", Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Cwd: ptr("/w"),
				Env: map[string]string{"HOME": "/w"}, EnvPolicy: &envpolicy.Policy{Inherit: envpolicy.InheritAll, Exclude: []string{"X"}}}},
		{"a login terminal's", "/snapshots/ws/prewarm", `{"shell":{"name":"bash","path":"/bin/bash"},"terminal":true}`,
			service.PrewarmInput{ScopeID: "ws", Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Terminal: true, Wait: true}},
		{"relative cwd goes to the service", "/snapshots/ws/prewarm?wait=true", `{"shell":{"name":"bash","path":"/bin/bash"},"cwd":"w"}`,
			service.PrewarmInput{ScopeID: "ws", Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Cwd: ptr("w"), Wait: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got service.PrewarmInput
			f := &fakeService{PrewarmFn: func(_ context.Context, in service.PrewarmInput) (shellsnap.EntryInfo, error) {
				got = in
				return readyEntry(in.ScopeID), nil
			}}
			if rec := serve(t, f, http.MethodPost, tt.target, tt.body, nil); rec.Code/100 != 2 {
				t.Fatalf("POST %s %s = %d %s", tt.target, tt.body, rec.Code, rec.Body)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("POST %s %s gave the service\n%+v\nwant\n%+v", tt.target, tt.body, got, tt.want)
			}
		})
	}
}

// TestScopeIDsRoundTrip: a scope id reaches the service exactly as the
// client wrote it, whatever it holds once path-escaped, and comes back so
// (cmd/server's test of the same name; the cache's own bound, 257 bytes and
// more, is its ErrInvalidScope, answered 422).
func TestScopeIDsRoundTrip(t *testing.T) {
	var got []string
	f := &fakeService{
		PrewarmFn: func(_ context.Context, in service.PrewarmInput) (shellsnap.EntryInfo, error) {
			got = append(got, in.ScopeID)
			if len(in.ScopeID) > shellsnap.MaxScopeBytes {
				return shellsnap.EntryInfo{}, shellsnap.ErrInvalidScope
			}
			return readyEntry(in.ScopeID), nil
		},
		ScopeSnapshotsFn: func(scope string) ([]shellsnap.EntryInfo, error) {
			got = append(got, scope)
			if scope == "none-such" {
				return nil, service.ErrNotFound
			}
			return []shellsnap.EntryInfo{readyEntry(scope)}, nil
		},
	}
	h := newTestRouter(t, f, io.Discard)
	do := func(method, target, body string) *httptest.ResponseRecorder {
		req := localRequest(method, target, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, scope := range []string{"a/b", "sp ace", "per%cent", "q?uery#frag", "ünï", "\x01\x7f", strings.Repeat("z", 256)} {
		got = nil
		escaped := url.PathEscape(scope)
		if rec := do("POST", "/snapshots/"+escaped+"/prewarm", `{"shell":{"name":"bash","path":"/bin/bash"}}`); rec.Code != 200 || jsonHas(rec.Body.Bytes(), `{"scopeId":`+jsonText(scope)+`}`) != nil {
			t.Errorf("prewarm of scope %q = %d %s", scope, rec.Code, rec.Body)
		}
		if rec := do("GET", "/snapshots/"+escaped, ""); rec.Code != 200 || jsonHas(rec.Body.Bytes(), `{"entries":[{"scopeId":`+jsonText(scope)+`}]}`) != nil {
			t.Errorf("GET of scope %q = %d %s", scope, rec.Code, rec.Body)
		}
		if len(got) != 2 || got[0] != scope || got[1] != scope {
			t.Errorf("scope %q reached the service as %q", scope, got)
		}
	}
	if rec := do("POST", "/snapshots/"+strings.Repeat("z", 257)+"/prewarm", `{"shell":{"name":"bash","path":"/bin/bash"}}`); rec.Code != 422 ||
		jsonHas(rec.Body.Bytes(), `{"code":"invalid_scope"}`) != nil {
		t.Errorf("257-byte scope = %d %s, want 422 invalid_scope", rec.Code, rec.Body)
	}
	if rec := do("GET", "/snapshots/none-such", ""); rec.Code != 404 {
		t.Errorf("GET of an unknown scope = %d, want 404", rec.Code)
	}
}
