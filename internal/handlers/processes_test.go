package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/service"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// TestStartProcessTranslation: a /processes body reaches the service as its
// own StartInput (no /exec request made up on the way); without timeoutMs
// the Timeout is zero, which the service reads as none for a background
// process.
func TestStartProcessTranslation(t *testing.T) {
	tests := []struct {
		name string
		body string
		want service.StartInput
	}{
		{"argv alone", `{"argv":["sleep","30"]}`, service.StartInput{ExecInput: service.ExecInput{Argv: []string{"sleep", "30"}}}},
		{"every field", `{"processId":"cat-1","argv":["cat"],"cwd":"/w","env":{"A":"1"},"envPolicy":{"inherit":"none"},
			"shellSnapshot":{"scopeId":"ws","shell":{"name":"zsh","path":"/bin/zsh"}},"stdin":"x","pipeStdin":true,"timeoutMs":2000,"idleTimeoutMs":300}`,
			service.StartInput{ExecInput: service.ExecInput{
				ProcessID: "cat-1", Argv: []string{"cat"}, Cwd: ptr("/w"), Env: map[string]string{"A": "1"},
				EnvPolicy: policyFrom(&EnvPolicy{Inherit: ptr(EnvPolicyInherit("none"))}),
				Snapshot:  &shellsnap.Request{ScopeID: "ws", Shell: shellsnap.Shell{Name: "zsh", Path: "/bin/zsh"}},
				Stdin:     []byte("x"), Timeout: 2 * time.Second, IdleTimeout: 300 * time.Millisecond,
			}, PipeStdin: true}},
		{"a terminal", `{"argv":["/bin/bash","-l"],"tty":{"cols":120,"rows":40},"arg0":"-bash"}`,
			service.StartInput{ExecInput: service.ExecInput{Argv: []string{"/bin/bash", "-l"}, TTY: &exec.TTYSize{Cols: 120, Rows: 40}, Arg0: "-bash"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got service.StartInput
			f := &fakeService{StartFn: func(_ context.Context, in service.StartInput) (service.ProcessInfo, error) {
				got = in
				return proc("p-1"), nil
			}}
			if rec := serve(t, f, http.MethodPost, "/processes", tt.body, nil); rec.Code != http.StatusCreated {
				t.Fatalf("POST /processes %s = %d %s", tt.body, rec.Code, rec.Body)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("POST /processes %s gave the service\n%+v\nwant\n%+v", tt.body, got, tt.want)
			}
		})
	}
}

// withProcesses is a service whose table holds procs (by id) and answers
// every operation by id from it, recording what it was asked.
func withProcesses(procs ...service.ProcessInfo) func() *fakeService {
	return func() *fakeService {
		byID := map[string]service.ProcessInfo{}
		for _, p := range procs {
			byID[p.ID] = p
		}
		find := func(id string) (service.ProcessInfo, error) {
			if p, ok := byID[id]; ok {
				return p, nil
			}
			return service.ProcessInfo{}, service.ErrNotFound
		}
		return &fakeService{
			StartFn: func(_ context.Context, in service.StartInput) (service.ProcessInfo, error) {
				if _, err := find(in.ProcessID); err == nil {
					return service.ProcessInfo{}, fmt.Errorf("%w: %s", exec.ErrProcessExists, in.ProcessID)
				}
				p := proc(in.ProcessID)
				p.Argv, p.PipeStdin = in.Argv, in.PipeStdin
				return p, nil
			},
			ListFn: func() []service.ProcessInfo { return procs },
			GetFn:  find,
			TerminateFn: func(id string) (bool, error) {
				p, err := find(id)
				return p.Status == exec.StatusRunning, err
			},
			SignalFn: func(id string, sig syscall.Signal) (bool, error) {
				p, err := find(id)
				return p.Status == exec.StatusRunning && sig == syscall.SIGHUP, err
			},
			ResizeFn: func(id string, size exec.TTYSize) error {
				p, err := find(id)
				switch {
				case err != nil:
					return err
				case p.Status != exec.StatusRunning:
					return exec.ErrProcessExited
				case p.TTY == nil:
					return exec.ErrNotATTY
				}
				return nil
			},
		}
	}
}

// ended is a process that exited 2 in /w after a SIGTERM it handled.
func ended(id string) service.ProcessInfo {
	p := proc(id)
	code := 2
	p.Status, p.ExitCode, p.Dir = exec.StatusExited, &code, "/w"
	p.EndedAt = p.StartedAt.Add(p.Duration)
	p.Argv = []string{"/bin/bash", "-lc", "make"}
	p.Snapshot = shellsnap.Receipt{Outcome: shellsnap.OutcomeUsed, State: shellsnap.StateCacheHit, Standby: true}
	p.StdoutBytes, p.StderrBytes, p.NextSeq = 10, 20, 7
	return p
}

// TestProcessHandlers: the process routes over a fake table, by id: the
// views, the statuses and every error the contract names. Among them the
// HTTP half of cmd/server's TestProcessLifecycle (201 and Location, 409 for a
// taken id, the terminate and signal answers, 404, the list).
func TestProcessHandlers(t *testing.T) {
	running, done, term := proc("cat-1"), ended("make-1"), proc("sh-1")
	term.TTY, term.PipeStdin = &exec.TTYSize{Cols: 80, Rows: 24}, true
	table, terms := withProcesses(running, done), withProcesses(running, done, term)
	runHandlerCases(t, []handlerCase{
		{name: "start", method: "POST", target: "/processes", body: `{"processId":"new-1","argv":["cat"],"pipeStdin":true}`,
			svc: table, status: 201, calls: []string{"Start"},
			want: `{"processId":"new-1","pid":4242,"argv":["cat"],"status":"running","exitCode":null,"signal":null,
				"startedAt":"2026-12-01T10:00:00Z","durationMs":1500,"pipeStdin":true,"stdoutBytes":0,"stderrBytes":0,"nextSeq":1,
				"snapshot":{"outcome":"not_requested","waitMs":0,"standby":false}}`,
			check: func(t *testing.T, rec *httptest.ResponseRecorder) {
				if got := rec.Header().Get("Location"); got != "/processes/new-1" {
					t.Errorf("Location = %q, want /processes/new-1", got)
				}
			}},
		{name: "start with a taken id", method: "POST", target: "/processes", body: `{"processId":"cat-1","argv":["true"]}`,
			svc: table, status: 409, calls: []string{"Start"}, want: `{"code":"process_exists","field":"processId"}`},
		{name: "start refused by the contract", method: "POST", target: "/processes", body: `{"processId":"a b","argv":["true"]}`,
			svc: table, status: 400, want: `{"code":"invalid_request","field":"processId"}`},
		{name: "list", method: "GET", target: "/processes", svc: table, status: 200, calls: []string{"List"},
			want: `{"processes":[{"processId":"cat-1","status":"running"},
				{"processId":"make-1","argv":["/bin/bash","-lc","make"],"cwd":"/w","status":"exited","exitCode":2,
				"endedAt":"2026-12-01T10:00:01.5Z","stdoutBytes":10,"stderrBytes":20,"nextSeq":7,
				"snapshot":{"outcome":"used","state":"cache_hit","standby":true}}]}`,
			check: func(t *testing.T, rec *httptest.ResponseRecorder) {
				var got struct{ Processes []map[string]any }
				if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || len(got.Processes) != 2 {
					t.Fatalf("GET /processes = %s, want two processes", rec.Body)
				}
				for _, absent := range []string{"cwd", "endedAt"} {
					if v, ok := got.Processes[0][absent]; ok {
						t.Errorf("a running process without a cwd of its own shows %s %v, want none", absent, v)
					}
				}
			}},
		{name: "list of none", method: "GET", target: "/processes", svc: withProcesses(), status: 200, calls: []string{"List"},
			want: `{"processes":[]}`},
		{name: "get", method: "GET", target: "/processes/make-1", svc: table, status: 200, calls: []string{"Get make-1"},
			want: `{"processId":"make-1","status":"exited","exitCode":2}`},
		{name: "get unknown", method: "GET", target: "/processes/none-such", svc: table, status: 404, calls: []string{"Get none-such"},
			want: `{"code":"not_found"}`},
		{name: "terminate", method: "DELETE", target: "/processes/cat-1", svc: table, status: 200, calls: []string{"Terminate cat-1"},
			want: `{"running":true}`},
		{name: "terminate an ended one", method: "DELETE", target: "/processes/make-1", svc: table, status: 200, calls: []string{"Terminate make-1"},
			want: `{"running":false}`},
		{name: "terminate unknown", method: "DELETE", target: "/processes/none-such", svc: table, status: 404, calls: []string{"Terminate none-such"},
			want: `{"code":"not_found"}`},
		{name: "signal", method: "POST", target: "/processes/cat-1/signal", body: `{"signal":"hangup"}`, svc: table, status: 200,
			calls: []string{"Signal cat-1"}, want: `{"delivered":true}`},
		{name: "signal not delivered", method: "POST", target: "/processes/make-1/signal", body: `{"signal":"SIGHUP"}`, svc: table, status: 200,
			calls: []string{"Signal make-1"}, want: `{"delivered":false}`},
		{name: "signal unknown", method: "POST", target: "/processes/none-such/signal", body: `{"signal":"SIGHUP"}`, svc: table, status: 404,
			calls: []string{"Signal none-such"}, want: `{"code":"not_found"}`},
		// cmd/server's TestSignalNames: a signal outside the four is refused and
		// nothing is sent.
		{name: "signal SIGSEGV", method: "POST", target: "/processes/cat-1/signal", body: `{"signal":"SIGSEGV"}`, svc: table, status: 400,
			want: `{"code":"invalid_request","field":"signal"}`},
		{name: "resize", method: "POST", target: "/processes/sh-1/resize", body: `{"cols":120,"rows":40}`, svc: terms, status: 200,
			calls: []string{"Resize sh-1"}, want: `{"cols":120,"rows":40}`},
		{name: "resize without a terminal", method: "POST", target: "/processes/cat-1/resize", body: `{"cols":120,"rows":40}`, svc: terms, status: 409,
			calls: []string{"Resize cat-1"}, want: `{"code":"not_a_tty"}`},
		{name: "resize an ended one", method: "POST", target: "/processes/make-1/resize", body: `{"cols":120,"rows":40}`, svc: terms, status: 409,
			calls: []string{"Resize make-1"}, want: `{"code":"process_exited"}`},
		{name: "resize beyond 1000", method: "POST", target: "/processes/sh-1/resize", body: `{"cols":1001,"rows":40}`, svc: terms, status: 400,
			want: `{"code":"invalid_request","field":"cols"}`},
		{name: "resize to zero", method: "POST", target: "/processes/sh-1/resize", body: `{"cols":80,"rows":0}`, svc: terms, status: 400,
			want: `{"code":"invalid_request","field":"rows"}`},
		{name: "get a terminal", method: "GET", target: "/processes/sh-1", svc: terms, status: 200, calls: []string{"Get sh-1"},
			want: `{"processId":"sh-1","tty":{"cols":80,"rows":24},"pipeStdin":true}`},
	})
}

// TestSignalNames: a request may name a signal as a result names it, or by
// its older word; the service gets that signal (cmd/server's test of the same
// name, less the ending of a real process, which exec's signal tests check).
func TestSignalNames(t *testing.T) {
	tests := []struct {
		send string
		want syscall.Signal
	}{
		{"SIGINT", syscall.SIGINT}, {"SIGTERM", syscall.SIGTERM}, {"SIGKILL", syscall.SIGKILL}, {"SIGHUP", syscall.SIGHUP},
		{"interrupt", syscall.SIGINT}, {"terminate", syscall.SIGTERM}, {"kill", syscall.SIGKILL}, {"hangup", syscall.SIGHUP},
	}
	for _, tt := range tests {
		t.Run(tt.send, func(t *testing.T) {
			var got syscall.Signal
			f := &fakeService{SignalFn: func(_ string, sig syscall.Signal) (bool, error) { got = sig; return true, nil }}
			rec := serve(t, f, "POST", "/processes/p-1/signal", `{"signal":"`+tt.send+`"}`, nil)
			if rec.Code != 200 || got != tt.want {
				t.Errorf("signal %s = %d, sent %v; want 200 and %v", tt.send, rec.Code, got, tt.want)
			}
		})
	}
}

// TestWriteProcessStdin: data and dataBase64 reach the service as bytes
// (never both), with the write id and close; its answer and errors map as
// the contract says.
func TestWriteProcessStdin(t *testing.T) {
	var got service.StdinInput
	writes := func(out service.StdinOutput, err error) func() *fakeService {
		return func() *fakeService {
			got = service.StdinInput{}
			return &fakeService{WriteStdinFn: func(_ context.Context, _ string, in service.StdinInput) (service.StdinOutput, error) {
				got = in
				return out, err
			}}
		}
	}
	wrote := func(want service.StdinInput) func(*testing.T, *httptest.ResponseRecorder) {
		return func(t *testing.T, _ *httptest.ResponseRecorder) {
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the service got %+v, want %+v", got, want)
			}
		}
	}
	ok := service.StdinOutput{StdinWrite: exec.StdinWrite{Written: 3}}
	runHandlerCases(t, []handlerCase{
		{name: "text", method: "POST", target: "/processes/p-1/stdin", body: `{"data":"one"}`, svc: writes(ok, nil), status: 200,
			calls: []string{"WriteStdin p-1"}, want: `{"written":3,"alreadyWritten":0,"duplicate":false,"closed":false}`,
			check: wrote(service.StdinInput{Data: []byte("one")})},
		{name: "bytes, an id, and close", method: "POST", target: "/processes/p-1/stdin", body: `{"dataBase64":"dHdvCg==","writeId":"w2","close":true}`,
			svc:    writes(service.StdinOutput{StdinWrite: exec.StdinWrite{Written: 2, AlreadyWritten: 2}, Closed: true}, nil),
			status: 200, calls: []string{"WriteStdin p-1"}, want: `{"written":2,"alreadyWritten":2,"duplicate":false,"closed":true}`,
			check: wrote(service.StdinInput{Data: []byte("two\n"), WriteID: "w2", Close: true})},
		{name: "duplicate", method: "POST", target: "/processes/p-1/stdin", body: `{"data":"one","writeId":"w1"}`,
			svc:    writes(service.StdinOutput{StdinWrite: exec.StdinWrite{AlreadyWritten: 3, Duplicate: true}}, nil),
			status: 200, calls: []string{"WriteStdin p-1"}, want: `{"written":0,"alreadyWritten":3,"duplicate":true}`},
		{name: "close alone", method: "POST", target: "/processes/p-1/stdin", body: `{"close":true}`,
			svc: writes(service.StdinOutput{Closed: true}, nil), status: 200, calls: []string{"WriteStdin p-1"}, want: `{"closed":true}`,
			check: wrote(service.StdinInput{Close: true})},
		{name: "both data fields", method: "POST", target: "/processes/p-1/stdin", body: `{"data":"a","dataBase64":"YQ=="}`,
			svc: writes(ok, nil), status: 400, want: `{"code":"invalid_request","field":"data"}`},
		// What the decode of dataBase64 refuses is the client's error, on
		// its field: the contract's format lets these through.
		{name: "base64 without its padding", method: "POST", target: "/processes/p-1/stdin", body: `{"dataBase64":"YQ"}`,
			svc: writes(ok, nil), status: 400, want: `{"code":"invalid_request","field":"dataBase64","detail":"dataBase64 is not base64: RFC 4648's standard alphabet (A-Z a-z 0-9 + /), padded with = to a multiple of 4 characters"}`},
		{name: "base64 of the URL alphabet", method: "POST", target: "/processes/p-1/stdin", body: `{"dataBase64":"-_8="}`,
			svc: writes(ok, nil), status: 400, want: `{"code":"invalid_request","field":"dataBase64"}`},
		{name: "not base64 at all", method: "POST", target: "/processes/p-1/stdin", body: `{"dataBase64":"!!!"}`,
			svc: writes(ok, nil), status: 400, want: `{"code":"invalid_request","field":"dataBase64","detail":"dataBase64 is not base64: RFC 4648's standard alphabet (A-Z a-z 0-9 + /), padded with = to a multiple of 4 characters"}`},
		{name: "base64 with padding inside", method: "POST", target: "/processes/p-1/stdin", body: `{"dataBase64":"YQ==YQ=="}`,
			svc: writes(ok, nil), status: 400, want: `{"code":"invalid_request","field":"dataBase64"}`},
		{name: "too large", method: "POST", target: "/processes/p-1/stdin", body: `{"data":"a"}`,
			svc: writes(service.StdinOutput{}, &service.FieldError{Field: "data", Reason: "data is 9 bytes; the limit is 8"}), status: 400,
			calls: []string{"WriteStdin p-1"}, want: `{"code":"invalid_request","field":"data"}`},
		{name: "exited", method: "POST", target: "/processes/p-1/stdin", body: `{"data":"late"}`,
			svc: writes(service.StdinOutput{}, exec.ErrProcessExited), status: 409, calls: []string{"WriteStdin p-1"},
			want: `{"code":"process_exited"}`},
		{name: "stdin closed", method: "POST", target: "/processes/p-1/stdin", body: `{"data":"x"}`,
			svc: writes(service.StdinOutput{}, exec.ErrStdinClosed), status: 409, calls: []string{"WriteStdin p-1"},
			want: `{"code":"stdin_closed"}`},
		{name: "not read within the bound", method: "POST", target: "/processes/p-1/stdin", body: `{"data":"y","writeId":"w1"}`,
			svc: writes(service.StdinOutput{}, &service.StdinNotReadError{StdinWrite: exec.StdinWrite{Written: 65536}, Bound: 30 * time.Second}), status: 409, calls: []string{"WriteStdin p-1"},
			want: `{"code":"stdin_not_read","detail":"the process did not read its stdin for 30s: 65536 bytes of this write went in: retry with the same writeId to write the rest"}`},
		{name: "writeId used for other data", method: "POST", target: "/processes/p-1/stdin", body: `{"data":"y","writeId":"w1"}`,
			svc: writes(service.StdinOutput{}, exec.ErrWriteIDReused), status: 409, calls: []string{"WriteStdin p-1"},
			want: `{"code":"write_id_reused","field":"writeId"}`},
		{name: "unknown", method: "POST", target: "/processes/p-1/stdin", body: `{"data":"x"}`,
			svc: writes(service.StdinOutput{}, service.ErrNotFound), status: 404, calls: []string{"WriteStdin p-1"},
			want: `{"code":"not_found"}`},
	})
}

// TestReadProcessOutput: the long poll's parameters reach the service, and
// its chunks come back as text or bytes; a resume point evicted is 410, one
// never produced 400 (cmd/server's TestLongPollReturnsOnOutput and
// TestEventsOutputLost, the HTTP half).
func TestReadProcessOutput(t *testing.T) {
	var got service.ReadInput
	reads := func(r exec.ReadResult, err error) func() *fakeService {
		return func() *fakeService {
			got = service.ReadInput{}
			return &fakeService{ReadFn: func(_ context.Context, _ string, in service.ReadInput) (exec.ReadResult, error) {
				got = in
				return r, err
			}}
		}
	}
	asked := func(want service.ReadInput) func(*testing.T, *httptest.ResponseRecorder) {
		return func(t *testing.T, _ *httptest.ResponseRecorder) {
			if got != want {
				t.Errorf("the service got %+v, want %+v", got, want)
			}
		}
	}
	code := 0
	chunks := exec.ReadResult{Chunks: []exec.Chunk{
		{Seq: 4, Stream: exec.Stdout, Data: []byte("late\n")},
		{Seq: 5, Stream: exec.Stderr, Data: []byte{0xff}},
	}, NextSeq: 6, Exited: true, ExitCode: &code, Closed: true}
	runHandlerCases(t, []handlerCase{
		{name: "chunks", method: "GET", target: "/processes/p-1/output?afterSeq=3&maxBytes=10&waitMs=500", svc: reads(chunks, nil),
			status: 200, calls: []string{"Read p-1"},
			want: `{"chunks":[{"seq":4,"stream":"stdout","data":"late\n"},{"seq":5,"stream":"stderr","dataBase64":"/w=="}],
				"nextSeq":6,"exited":true,"exitCode":0,"closed":true}`,
			check: asked(service.ReadInput{AfterSeq: 3, MaxBytes: 10, Wait: 500 * time.Millisecond})},
		{name: "nothing new", method: "GET", target: "/processes/p-1/output", svc: reads(exec.ReadResult{NextSeq: 6}, nil),
			status: 200, calls: []string{"Read p-1"}, want: `{"chunks":[],"nextSeq":6,"exited":false,"exitCode":null,"closed":false}`,
			check: asked(service.ReadInput{})},
		{name: "evicted", method: "GET", target: "/processes/p-1/output?afterSeq=1", svc: reads(exec.ReadResult{NextSeq: 900}, exec.ErrOutputLost),
			status: 410, calls: []string{"Read p-1"}, want: `{"code":"output_lost","field":"afterSeq"}`},
		{name: "ahead", method: "GET", target: "/processes/p-1/output?afterSeq=99", svc: reads(exec.ReadResult{NextSeq: 6}, exec.ErrSeqAhead),
			status: 400, calls: []string{"Read p-1"}, want: `{"code":"invalid_request","field":"afterSeq"}`},
		{name: "unknown", method: "GET", target: "/processes/p-1/output", svc: reads(exec.ReadResult{}, service.ErrNotFound),
			status: 404, calls: []string{"Read p-1"}, want: `{"code":"not_found"}`},
		{name: "wait beyond the contract's", method: "GET", target: "/processes/p-1/output?waitMs=60001", svc: reads(chunks, nil),
			status: 400, want: `{"code":"invalid_request","field":"waitMs"}`},
		{name: "negative afterSeq", method: "GET", target: "/processes/p-1/output?afterSeq=-5", svc: reads(chunks, nil),
			status: 400, want: `{"code":"invalid_request","field":"afterSeq"}`},
	})
}
