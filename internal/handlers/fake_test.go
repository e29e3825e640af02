package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/snapexec/snapexec/api"
	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/service"
	"github.com/snapexec/snapexec/internal/session"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// fakeService is the service as a test sets it: a struct of func fields, one
// per method the handlers call (the mocks of Ben Johnson's WTF Dial). A
// method whose field is nil panics, which the router answers 500, so that a
// test never passes through a call it did not set up. Every call is recorded
// by name and id in calls.
type fakeService struct {
	ExecFn            func(ctx context.Context, in service.ExecInput) (service.ExecOutput, error)
	StartExecFn       func(ctx context.Context, in service.ExecInput) (service.Follower, error)
	StartFn           func(ctx context.Context, in service.StartInput) (service.ProcessInfo, error)
	ListFn            func() []service.ProcessInfo
	GetFn             func(id string) (service.ProcessInfo, error)
	ReadFn            func(ctx context.Context, id string, in service.ReadInput) (exec.ReadResult, error)
	WriteStdinFn      func(ctx context.Context, id string, in service.StdinInput) (service.StdinOutput, error)
	SignalFn          func(id string, sig syscall.Signal) (bool, error)
	TerminateFn       func(id string) (bool, error)
	ResizeFn          func(id string, size exec.TTYSize) error
	AttachFn          func(id string, afterSeq int64) (*service.Attachment, error)
	FollowFn          func(id string, afterSeq int64) (service.Follower, error)
	PrewarmFn         func(ctx context.Context, in service.PrewarmInput) (shellsnap.EntryInfo, error)
	SnapshotsFn       func() []shellsnap.EntryInfo
	ScopeSnapshotsFn  func(scopeID string) ([]shellsnap.EntryInfo, error)
	ForgetSnapshotsFn func(scopeID string)
	StatsFn           func() service.Stats
	CreateSessionFn   func(ctx context.Context, in service.SessionInput) (session.Info, error)
	SessionExecFn     func(ctx context.Context, id string, in service.SessionExecInput) (service.SessionExecOutput, error)
	SessionsFn        func() []session.Info
	SessionFn         func(id string) (session.Info, error)
	DeleteSessionFn   func(id string) error
	ForkSessionFn     func(id, forkID string) (session.Info, error)
	// ShuttingDownFn, when set, is the Gate; nil means a gate that never closes.
	ShuttingDownFn func() bool

	mu    sync.Mutex
	calls []string
}

var (
	_ Executor    = (*fakeService)(nil)
	_ Processes   = (*fakeService)(nil)
	_ Snapshots   = (*fakeService)(nil)
	_ StatsSource = (*fakeService)(nil)
	_ Sessions    = (*fakeService)(nil)
	_ Gate        = (*fakeService)(nil)
)

func (f *fakeService) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

// called returns the calls made so far, as "Method" or "Method id".
func (f *fakeService) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeService) Exec(ctx context.Context, in service.ExecInput) (service.ExecOutput, error) {
	f.record("Exec")
	return f.ExecFn(ctx, in)
}

func (f *fakeService) StartExec(ctx context.Context, in service.ExecInput) (service.Follower, error) {
	f.record("StartExec")
	return f.StartExecFn(ctx, in)
}

func (f *fakeService) Start(ctx context.Context, in service.StartInput) (service.ProcessInfo, error) {
	f.record("Start")
	return f.StartFn(ctx, in)
}

func (f *fakeService) List() []service.ProcessInfo {
	f.record("List")
	return f.ListFn()
}

func (f *fakeService) Get(id string) (service.ProcessInfo, error) {
	f.record("Get " + id)
	return f.GetFn(id)
}

func (f *fakeService) Read(ctx context.Context, id string, in service.ReadInput) (exec.ReadResult, error) {
	f.record("Read " + id)
	return f.ReadFn(ctx, id, in)
}

func (f *fakeService) WriteStdin(ctx context.Context, id string, in service.StdinInput) (service.StdinOutput, error) {
	f.record("WriteStdin " + id)
	return f.WriteStdinFn(ctx, id, in)
}

func (f *fakeService) Signal(id string, sig syscall.Signal) (bool, error) {
	f.record("Signal " + id)
	return f.SignalFn(id, sig)
}

func (f *fakeService) Resize(id string, size exec.TTYSize) error {
	f.record("Resize " + id)
	return f.ResizeFn(id, size)
}

func (f *fakeService) Attach(id string, afterSeq int64) (*service.Attachment, error) {
	f.record("Attach " + id)
	return f.AttachFn(id, afterSeq)
}

func (f *fakeService) Follow(id string, afterSeq int64) (service.Follower, error) {
	f.record(fmt.Sprintf("Follow %s %d", id, afterSeq))
	return f.FollowFn(id, afterSeq)
}

// fakeFollower is a scripted service.Follower: next answers Next, and every
// call is recorded on svc by name.
type fakeFollower struct {
	svc    *fakeService
	next   func(ctx context.Context, wait time.Duration) (exec.ReadResult, error)
	info   service.ProcessInfo
	result func(ctx context.Context) (service.ExecOutput, error)
}

func (f *fakeFollower) Next(ctx context.Context, wait time.Duration) (exec.ReadResult, error) {
	f.svc.record("Next")
	return f.next(ctx, wait)
}

func (f *fakeFollower) Info() service.ProcessInfo {
	f.svc.record("Info")
	return f.info
}

func (f *fakeFollower) Result(ctx context.Context) (service.ExecOutput, error) {
	f.svc.record("Result")
	return f.result(ctx)
}

func (f *fakeFollower) Terminate() bool {
	f.svc.record("Terminate")
	return true
}

func (f *fakeFollower) Close() {}

func (f *fakeService) Terminate(id string) (bool, error) {
	f.record("Terminate " + id)
	return f.TerminateFn(id)
}

func (f *fakeService) Prewarm(ctx context.Context, in service.PrewarmInput) (shellsnap.EntryInfo, error) {
	f.record("Prewarm " + in.ScopeID)
	return f.PrewarmFn(ctx, in)
}

func (f *fakeService) Snapshots() []shellsnap.EntryInfo {
	f.record("Snapshots")
	return f.SnapshotsFn()
}

func (f *fakeService) ScopeSnapshots(scopeID string) ([]shellsnap.EntryInfo, error) {
	f.record("ScopeSnapshots " + scopeID)
	return f.ScopeSnapshotsFn(scopeID)
}

func (f *fakeService) ForgetSnapshots(scopeID string) {
	f.record("ForgetSnapshots " + scopeID)
	f.ForgetSnapshotsFn(scopeID)
}

func (f *fakeService) Stats() service.Stats {
	f.record("Stats")
	return f.StatsFn()
}

func (f *fakeService) ShuttingDown() bool { return f.ShuttingDownFn() }

func (f *fakeService) CreateSession(ctx context.Context, in service.SessionInput) (session.Info, error) {
	f.record("CreateSession")
	return f.CreateSessionFn(ctx, in)
}

func (f *fakeService) SessionExec(ctx context.Context, id string, in service.SessionExecInput) (service.SessionExecOutput, error) {
	f.record("SessionExec " + id)
	return f.SessionExecFn(ctx, id, in)
}

// StartSessionExec has no field: the streamed answer's loop is /exec's,
// tested there.
func (f *fakeService) StartSessionExec(context.Context, string, service.SessionExecInput) (service.Follower, func(context.Context) (service.SessionExecOutput, error), error) {
	panic("StartSessionExec is not faked")
}

func (f *fakeService) Sessions() []session.Info {
	f.record("Sessions")
	return f.SessionsFn()
}

func (f *fakeService) Session(id string) (session.Info, error) {
	f.record("Session " + id)
	return f.SessionFn(id)
}

func (f *fakeService) DeleteSession(id string) error {
	f.record("DeleteSession " + id)
	return f.DeleteSessionFn(id)
}

func (f *fakeService) ForkSession(id, forkID string) (session.Info, error) {
	f.record("ForkSession " + id)
	return f.ForkSessionFn(id, forkID)
}

// deps is f as every dependency of the handlers.
func (f *fakeService) deps() Deps {
	d := Deps{Exec: f, Processes: f, Snapshots: f, Sessions: f, Stats: f}
	if f.ShuttingDownFn != nil {
		d.Gate = f
	}
	return d
}

// testLimits are the limits the fakes validate with, as the service does.
var testLimits = service.Limits{MaxTimeout: time.Minute, MaxOutputBytes: 1 << 20}

// okExecutor is a service whose Exec validates its input as the service does
// and answers a command that exited 0.
func okExecutor() *fakeService {
	return &fakeService{ExecFn: func(_ context.Context, in service.ExecInput) (service.ExecOutput, error) {
		if err := in.Validate(testLimits); err != nil {
			return service.ExecOutput{}, err
		}
		code := 0
		return service.ExecOutput{ProcessID: "p-1", Result: exec.Result{Status: exec.StatusExited, ExitCode: &code}}, nil
	}}
}

func newTestRouter(t testing.TB, f *fakeService, logs io.Writer) http.Handler {
	t.Helper()
	return newRouterWithLogs(t, f, logs, RouterOptions{})
}

// newRouterWith is newTestRouter with the router's options.
func newRouterWith(t testing.TB, f *fakeService, opts RouterOptions) http.Handler {
	t.Helper()
	return newRouterWithLogs(t, f, io.Discard, opts)
}

func newRouterWithLogs(t testing.TB, f *fakeService, logs io.Writer, opts RouterOptions) http.Handler {
	t.Helper()
	h, err := NewRouter(New(f.deps(), api.Spec, "test"), zerolog.New(logs), opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// serve sends one request from a loopback client through the whole router
// over f; a body is sent as JSON.
func serve(t testing.TB, f *fakeService, method, target, body string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := localRequest(method, target, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	newTestRouter(t, f, io.Discard).ServeHTTP(rec, req)
	return rec
}

// handlerCase is one request to the router over a fake service, and what
// must come of it: the status, the answer (a JSON document of which every
// field given must be in the body, with the same value; a problem's code and
// field among them), and the calls the fake got.
type handlerCase struct {
	name           string
	method, target string
	body           string
	header         map[string]string
	svc            func() *fakeService
	status         int
	want           string
	calls          []string
	// check, when set, checks more of the answer.
	check func(t *testing.T, rec *httptest.ResponseRecorder)
}

func runHandlerCases(t *testing.T, tests []handlerCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.svc()
			rec := serve(t, f, tt.method, tt.target, tt.body, tt.header)
			what := tt.method + " " + tt.target + " " + tt.body
			if rec.Code != tt.status {
				t.Errorf("%s = %d %s, want %d", what, rec.Code, rec.Body, tt.status)
			}
			if tt.want != "" {
				if err := jsonHas(rec.Body.Bytes(), tt.want); err != nil {
					t.Errorf("%s = %s: %v", what, rec.Body, err)
				}
			}
			if got := f.called(); !slices.Equal(got, tt.calls) {
				t.Errorf("%s called %q, want %q", what, got, tt.calls)
			}
			if tt.check != nil {
				tt.check(t, rec)
			}
		})
	}
}

// jsonHas reports how body differs from want: every field of want must be in
// body with the same value (objects compared field by field, arrays element
// by element, anything else whole).
func jsonHas(body []byte, want string) error {
	var got, w any
	if err := json.Unmarshal(body, &got); err != nil {
		return fmt.Errorf("the answer is not JSON: %v", err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		return fmt.Errorf("the test's want is not JSON: %v", err)
	}
	return contains("", got, w)
}

func contains(path string, got, want any) error {
	if wl, ok := want.([]any); ok {
		gl, ok := got.([]any)
		if !ok || len(gl) != len(wl) {
			return fmt.Errorf("%s = %v, want %d elements", orRoot(path), jsonText(got), len(wl))
		}
		for i := range wl {
			if err := contains(fmt.Sprintf("%s[%d]", path, i), gl[i], wl[i]); err != nil {
				return err
			}
		}
		return nil
	}
	wm, ok := want.(map[string]any)
	if !ok {
		if !reflect.DeepEqual(got, want) {
			return fmt.Errorf("%s = %v, want %v", orRoot(path), jsonText(got), jsonText(want))
		}
		return nil
	}
	gm, ok := got.(map[string]any)
	if !ok {
		return fmt.Errorf("%s = %v, want an object", orRoot(path), jsonText(got))
	}
	for k, v := range wm {
		g, ok := gm[k]
		if !ok {
			return fmt.Errorf("%s.%s is missing, want %v", orRoot(path), k, jsonText(v))
		}
		if err := contains(path+"."+k, g, v); err != nil {
			return err
		}
	}
	return nil
}

func orRoot(path string) string {
	if path == "" {
		return "the body"
	}
	return path[1:]
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// proc is a running process as the service shows it.
func proc(id string) service.ProcessInfo {
	return service.ProcessInfo{Info: exec.Info{
		ID: id, Pid: 4242, Argv: []string{"sleep", "30"}, Status: exec.StatusRunning,
		StartedAt: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Duration: 1500 * time.Millisecond,
		NextSeq: 1,
	}, Snapshot: shellsnap.Receipt{Outcome: shellsnap.OutcomeNotRequested}}
}
