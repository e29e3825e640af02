package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapexec/snapexec/client"
)

// syncBuffer is a bytes.Buffer that run's goroutines and the test can share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testServer is a real server started through run on 127.0.0.1:0.
type testServer struct {
	url    string
	cancel context.CancelFunc
	done   chan error
	logs   *syncBuffer
}

// api is a client of the server, the one an IDE backend written in Go
// would use: the tests that go through it check the contract, the client
// and the server together.
func (s *testServer) api(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.New(s.url)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var listenLine = regexp.MustCompile(`listening on (http://\S+)`)

// inProcessServers counts the servers startServer runs in this process whose
// run has not returned. A server's exec.Reaper is its process's one: it
// reaps, as an orphan, every exited child of the process that it did not
// start itself, and reports every live one in a group of its own as escaped.
// Two in one process reap each other's commands before their own waits
// (whose requests then never answer), and so does one while the test starts
// children in process groups of their own. A test that needs several servers
// at once, or such children, runs its servers as processes of their own
// (startServerProcess).
var inProcessServers atomic.Int32

// startServer calls run with args (after the program name) and, as the
// server's environment, the test's own less its SNAPEXEC_* variables with env
// laid over it, and waits until /healthz answers. Only one may run at a time
// (inProcessServers).
func startServer(t *testing.T, env map[string]string, args ...string) *testServer {
	t.Helper()
	if inProcessServers.Add(1) > 1 {
		inProcessServers.Add(-1)
		t.Fatal("startServer: a server already runs in this process, and its reaper would reap this one's children; use startServerProcess")
	}
	ctx, cancel := context.WithCancel(context.Background())
	stdout, logs := &syncBuffer{}, &syncBuffer{}
	s := &testServer{cancel: cancel, done: make(chan error, 1), logs: logs}
	environ := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "SNAPEXEC_") })
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	argv := append([]string{"snapexec", "--addr", "127.0.0.1:0", "--grace", "300ms"}, args...)
	go func() {
		err := run(ctx, argv, environ, strings.NewReader(""), stdout, logs)
		inProcessServers.Add(-1) // its reaper's context has ended
		s.done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for s.url == "" {
		if m := listenLine.FindStringSubmatch(stdout.String()); m != nil {
			s.url = m[1]
			break
		}
		select {
		case err := <-s.done:
			t.Fatalf("run() returned early: %v; logs:\n%s", err, logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no listening line; logs:\n%s", logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for {
		resp, err := http.Get(s.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz never answered 200: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop cancels run's context and checks that it returns nil.
func (s *testServer) stop(t *testing.T) {
	t.Helper()
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("run() = %v, want nil", err)
		}
	case <-time.After(15 * time.Second):
		t.Errorf("run() did not return after cancel")
	}
}

// post sends body as JSON and decodes the answer into a map.
func (s *testServer) post(t *testing.T, path string, body any) (int, map[string]any, http.Header) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(s.url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("POST %s answered %d with non-JSON %q", path, resp.StatusCode, raw)
	}
	return resp.StatusCode, out, resp.Header
}

func TestRunServesExec(t *testing.T) {
	s := startServer(t, nil)
	api := s.api(t)
	stdin := "line one\nline two\n"
	tests := []struct {
		name       string
		req        client.ExecRequest
		wantStatus client.ExitStatus
		wantCode   int // -1: none
		wantStdout string
		wantStderr string
	}{
		{"echo", client.ExecRequest{Argv: []string{"echo", "hi"}}, client.ExitStatusExited, 0, "hi\n", ""},
		{"exit code", client.ExecRequest{Argv: []string{"sh", "-c", "exit 3"}}, client.ExitStatusExited, 3, "", ""},
		{"stderr", client.ExecRequest{Argv: []string{"sh", "-c", "echo err >&2"}}, client.ExitStatusExited, 0, "", "err\n"},
		{"stdin round trip", client.ExecRequest{Argv: []string{"cat"}, Stdin: &stdin}, client.ExitStatusExited, 0, stdin, ""},
		{"signaled", client.ExecRequest{Argv: []string{"sh", "-c", "kill -KILL $$"}}, client.ExitStatusSignaled, -1, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := api.Exec(context.Background(), tt.req)
			if err != nil {
				t.Fatalf("Exec(%q) = %v", tt.req.Argv, err)
			}
			code := -1
			if got.ExitCode != nil {
				code = *got.ExitCode
			}
			if got.Status != tt.wantStatus || code != tt.wantCode {
				t.Errorf("Exec(%q) = status %v exitCode %d, want %v %d", tt.req.Argv, got.Status, code, tt.wantStatus, tt.wantCode)
			}
			if string(got.StdoutData()) != tt.wantStdout || string(got.StderrData()) != tt.wantStderr {
				t.Errorf("Exec(%q) output = %q %q, want %q %q", tt.req.Argv, got.StdoutData(), got.StderrData(), tt.wantStdout, tt.wantStderr)
			}
		})
	}
}

func TestRunBinaryOutputRoundTrip(t *testing.T) {
	s := startServer(t, nil)
	got, err := s.api(t).Exec(context.Background(), client.ExecRequest{Argv: []string{"printf", `\377\376\000x`}})
	if err != nil {
		t.Fatalf("Exec = %v", err)
	}
	if got.Stdout != nil {
		t.Errorf("binary stdout came as text %q, want stdoutBase64 only", *got.Stdout)
	}
	if got.StdoutBase64 == nil || string(*got.StdoutBase64) != "\377\376\000x" {
		t.Errorf("stdoutBase64 = %v, want the bytes \\377\\376\\000x", got.StdoutBase64)
	}
}

// TestRunTimeoutLeavesNoProcess: a shell that starts a grandchild ignoring
// SIGTERM, then waits; after the timeout neither may be left.
func TestRunTimeoutLeavesNoProcess(t *testing.T) {
	s := startServer(t, nil)
	script := `trap '' TERM; sh -c 'trap "" TERM; echo $$; exec sleep 30'; wait`
	timeout := int64(300)
	got, err := s.api(t).Exec(context.Background(), client.ExecRequest{Argv: []string{"sh", "-c", script}, TimeoutMs: &timeout})
	if err != nil {
		t.Fatalf("Exec = %v", err)
	}
	if got.Status != client.ExitStatusTimedOut || got.Signal == nil || *got.Signal != "SIGKILL" {
		t.Errorf("Exec with a timeout = %v %v, want timed_out SIGKILL", got.Status, got.Signal)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(got.StdoutData())))
	if err != nil {
		t.Fatalf("grandchild pid %q: %v", got.StdoutData(), err)
	}
	if alive(pid) {
		t.Errorf("grandchild %d alive after the timeout", pid)
	}
	if got.Pid == nil || alive(*got.Pid) {
		t.Errorf("leader %v alive after the timeout", got.Pid)
	}
}

func TestRunProblems(t *testing.T) {
	s := startServer(t, nil)
	tests := []struct {
		name     string
		body     map[string]any
		wantHTTP int
		wantCode string
	}{
		{"missing program", map[string]any{"argv": []string{"/no/such/program"}}, 422, "spawn_failed"},
		{"missing cwd", map[string]any{"argv": []string{"true"}, "cwd": "/no/such/dir"}, 422, "cwd_not_found"},
		{"empty argv", map[string]any{"argv": []string{}}, 400, "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, got, hdr := s.post(t, "/exec", tt.body)
			if code != tt.wantHTTP || got["code"] != tt.wantCode {
				t.Errorf("POST /exec %v = %d %v, want %d %s", tt.body, code, got["code"], tt.wantHTTP, tt.wantCode)
			}
			if ct := hdr.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type = %q, want application/problem+json", ct)
			}
		})
	}
}

func TestRunShutdownTerminatesChildren(t *testing.T) {
	s := startServer(t, nil)
	type answer struct {
		code int
		body map[string]any
	}
	answers := make(chan answer, 1)
	go func() {
		code, body, _ := s.post(t, "/exec", map[string]any{"argv": []string{"sh", "-c", "echo $$; exec sleep 30"}})
		answers <- answer{code, body}
	}()
	time.Sleep(300 * time.Millisecond) // let the command start
	s.stop(t)
	a := <-answers
	if a.code != http.StatusOK || a.body["status"] != "shutdown" {
		t.Errorf("in-flight /exec on shutdown = %d %v, want 200 shutdown", a.code, a.body["status"])
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(a.body["stdout"].(string))); err != nil || alive(pid) {
		t.Errorf("child %q alive after shutdown (err %v)", a.body["stdout"], err)
	}
}

func TestRunReadyzAndContract(t *testing.T) {
	s := startServer(t, nil)
	resp, err := http.Get(s.url + "/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /readyz = %v %v, want 200", resp, err)
	}
	resp.Body.Close()
	resp, err = http.Get(s.url + "/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	want, _ := os.ReadFile("../../api/openapi.yaml")
	if !bytes.Equal(body, want) {
		t.Errorf("GET /openapi.yaml differs from api/openapi.yaml")
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
