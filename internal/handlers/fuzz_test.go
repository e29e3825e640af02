package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/service"
)

// FuzzDecode posts arbitrary bodies to /exec, as JSON, through the whole router
// (security checks, contract validator and its JSON decoder, strict decoder,
// handler) with an executor that never fails. Whatever the body, the answer is
// a 200 only for a JSON object whose argv is a non-empty array of strings, and
// then the executor got exactly that argv; anything else is a 4xx
// application/problem+json with a code, and the executor was not called. A
// panic shows as a 500 (the recoverer turns it into one) and fails too.
//
// The seed corpus is testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	var (
		once   sync.Once
		router http.Handler
		mu     sync.Mutex
		calls  []service.ExecInput
	)
	ex := &fakeService{ExecFn: func(_ context.Context, in service.ExecInput) (service.ExecOutput, error) {
		mu.Lock()
		calls = append(calls, in)
		mu.Unlock()
		code := 0
		return service.ExecOutput{ProcessID: "p-1", Result: exec.Result{Status: exec.StatusExited, ExitCode: &code}}, nil
	}}
	f.Fuzz(func(t *testing.T, body []byte) {
		// Loading the contract takes milliseconds: one router per fuzz worker.
		once.Do(func() { router = newTestRouter(t, ex, io.Discard) })
		if router == nil {
			t.Fatal("no router")
		}
		mu.Lock()
		calls = nil
		mu.Unlock()

		req := localRequest(http.MethodPost, "/exec", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		router.ServeHTTP(rec, req)

		mu.Lock()
		got := slices.Clone(calls)
		mu.Unlock()
		if rec.Code == http.StatusOK {
			argv, ok := wantArgv(body)
			if !ok {
				t.Fatalf("POST /exec %q = 200, want a problem: the body is not an object with a non-empty argv of strings", body)
			}
			if len(got) != 1 || !slices.Equal(got[0].Argv, argv) {
				t.Fatalf("POST /exec %q = 200; the executor got %d calls (%v), want one with argv %q", body, len(got), got, argv)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("POST /exec %q = 200 with Content-Type %q, want application/json", body, ct)
			}
			var res ExecResult
			if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || res.ProcessId == nil || *res.ProcessId != "p-1" {
				t.Errorf("POST /exec %q = 200 with body %q (%v), want the fake's ExecResult", body, rec.Body, err)
			}
			return
		}
		if rec.Code < 400 || rec.Code > 499 {
			t.Fatalf("POST /exec %q = %d %s, want 200 or a 4xx problem", body, rec.Code, rec.Body)
		}
		if len(got) != 0 {
			t.Errorf("POST /exec %q = %d, but the executor ran %v", body, rec.Code, got)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
			t.Fatalf("POST /exec %q = %d with Content-Type %q (%s), want application/problem+json", body, rec.Code, ct, rec.Body)
		}
		var p Problem
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Fatalf("POST /exec %q = %d with a problem that is not JSON %q: %v", body, rec.Code, rec.Body, err)
		}
		if p.Code == "" || p.Status != rec.Code || p.Type == "" || p.Title == "" || p.RequestId == "" {
			t.Errorf("POST /exec %q = %d with problem %+v, want code, status %d, type, title and requestId", body, rec.Code, p, rec.Code)
		}
	})
}

// wantArgv returns the argv of body when body is one JSON object whose argv is
// a non-empty array of strings.
func wantArgv(body []byte) ([]string, bool) {
	if !json.Valid(body) {
		return nil, false
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		return nil, false
	}
	raw, ok := obj["argv"]
	if !ok {
		return nil, false
	}
	var argv []string
	if err := json.Unmarshal(raw, &argv); err != nil || len(argv) == 0 {
		return nil, false
	}
	return argv, true
}
