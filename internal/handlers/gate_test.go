package handlers

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/service"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// notRunErr is what the service returns for a command whose request ended
// while it waited for its capture.
func notRunErr(status exec.Status) *service.NotRunError {
	return &service.NotRunError{Status: status, Snapshot: shellsnap.Receipt{Outcome: shellsnap.OutcomeNotRun, State: shellsnap.StateOnDemand, Reason: "it never ran"}}
}

func TestReadyzFollowsTheGate(t *testing.T) {
	var closed atomic.Bool
	f := okExecutor()
	f.ShuttingDownFn = closed.Load
	h := newTestRouter(t, f, io.Discard)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, localRequest("GET", "/readyz", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /readyz with the gate open = %d, want 200", rec.Code)
	}
	closed.Store(true)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, localRequest("GET", "/readyz", nil))
	if got := decodeProblem(t, rec); rec.Code != 503 || got.Code != ShuttingDown {
		t.Errorf("GET /readyz once shutting down = %d %q, want 503 shutting_down", rec.Code, got.Code)
	}
}

// TestCommandsThatNeverRan: each way a command that never ran is answered.
func TestCommandsThatNeverRan(t *testing.T) {
	notRun := func(status exec.Status) *fakeService {
		return &fakeService{
			StartFn: func(context.Context, service.StartInput) (service.ProcessInfo, error) {
				return service.ProcessInfo{}, notRunErr(status)
			},
			StartExecFn: func(context.Context, service.ExecInput) (service.Follower, error) {
				return nil, notRunErr(status)
			},
		}
	}
	execNotRun := func(status exec.Status) *fakeService {
		return &fakeService{ExecFn: func(context.Context, service.ExecInput) (service.ExecOutput, error) {
			return notRunErr(status).Output(), nil
		}}
	}
	tests := []struct {
		name       string
		svc        *fakeService
		path       string
		accept     string
		wantStatus int
		want       string // a problem code, or the ExecResult status
	}{
		{"exec at shutdown", execNotRun(exec.StatusShutdown), "/exec", "", 200, "shutdown"},
		{"exec past its timeout", execNotRun(exec.StatusTimedOut), "/exec", "", 200, "timed_out"},
		{"streamed exec at shutdown", notRun(exec.StatusShutdown), "/exec", "text/event-stream", 200, "shutdown"},
		{"background at shutdown", notRun(exec.StatusShutdown), "/processes", "", 503, "shutting_down"},
		{"background past its timeout", notRun(exec.StatusTimedOut), "/processes", "", 504, "deadline_exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newTestRouter(t, tt.svc, io.Discard)
			req := localRequest("POST", tt.path, strings.NewReader(`{"argv":["/bin/bash","-lc","true"],"timeoutMs":1000}`))
			req.Header.Set("Content-Type", "application/json")
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if tt.wantStatus != 200 {
				if got := decodeProblem(t, rec); rec.Code != tt.wantStatus || string(got.Code) != tt.want {
					t.Errorf("POST %s = %d %q, want %d %s", tt.path, rec.Code, got.Code, tt.wantStatus, tt.want)
				}
				return
			}
			body := rec.Body.String()
			if tt.accept != "" {
				data, ok := strings.CutPrefix(body, "event: exit\ndata: ")
				if !ok || rec.Header().Get("Content-Type") != "text/event-stream" {
					t.Fatalf("streamed answer = %q (%s), want one exit event", body, rec.Header().Get("Content-Type"))
				}
				body = data
			}
			var res struct {
				ProcessId, Pid any
				Status         string
				Snapshot       struct{ Outcome string }
			}
			if err := json.Unmarshal([]byte(body), &res); rec.Code != 200 || err != nil {
				t.Fatalf("POST %s = %d %q (%v), want 200 with an ExecResult", tt.path, rec.Code, body, err)
			}
			if res.Status != tt.want || res.ProcessId != nil || res.Pid != nil || res.Snapshot.Outcome != "not_run" ||
				!strings.Contains(body, `"pid":null`) || !strings.Contains(body, `"processId":null`) {
				t.Errorf("POST %s = %s, want status %s, pid and processId null, outcome not_run", tt.path, body, tt.want)
			}
		})
	}
}
