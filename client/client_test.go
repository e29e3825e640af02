package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapexec/snapexec/client"
	"github.com/snapexec/snapexec/internal/testserver"
)

// newClient is a client of the package's server (TestMain), or of url.
func newClient(t *testing.T, url string, opts ...client.ClientOption) *client.Client {
	t.Helper()
	if url == "" {
		url = os.Getenv("SNAPEXEC_URL")
	}
	c, err := client.New(url, append([]client.ClientOption{client.WithToken(os.Getenv("SNAPEXEC_TOKEN"))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testContext is bounded, so that a stream that never ends fails the test
// instead of hanging it.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// drain reads s to its end and returns its chunks.
func drain(t *testing.T, s *client.Stream) []client.OutputChunk {
	t.Helper()
	defer s.Close()
	var chunks []client.OutputChunk
	for {
		c, err := s.Next()
		if err == io.EOF {
			return chunks
		}
		if err != nil {
			t.Fatalf("Next() after %d chunks: %v", len(chunks), err)
		}
		chunks = append(chunks, c)
	}
}

// split joins the chunks of each stream, and checks that their seqs
// follow one another with no gap and no repeat.
func split(t *testing.T, chunks []client.OutputChunk) (stdout, stderr []byte) {
	t.Helper()
	for i, c := range chunks {
		if i > 0 && c.Seq != chunks[i-1].Seq+1 {
			t.Errorf("chunk %d has seq %d after %d, want %d", i, c.Seq, chunks[i-1].Seq, chunks[i-1].Seq+1)
		}
		switch c.Stream {
		case client.OutputChunkStreamStdout:
			stdout = append(stdout, c.Bytes()...)
		case client.OutputChunkStreamStderr:
			stderr = append(stderr, c.Bytes()...)
		default:
			t.Errorf("chunk %d has stream %q", i, c.Stream)
		}
	}
	return stdout, stderr
}

// waitEnded polls until the process is no longer running.
func waitEnded(ctx context.Context, t *testing.T, c *client.Client, id string) {
	t.Helper()
	for {
		p, err := client.Result(c.GetProcessWithResponse(ctx, id))
		if err != nil {
			t.Errorf("GetProcess(%s): %v", id, err)
			return
		}
		if p.Status != client.ProcessStatusRunning {
			return
		}
		select {
		case <-ctx.Done():
			t.Errorf("process %s still running", id)
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// errGone is what a vanishing server's dials fail with.
var errGone = errors.New("connection refused: the test's server is gone")

// vanishing reaches the package's server until vanish: then every
// connection it opened is cut, and every dial fails with errGone and is
// counted in refused.
type vanishing struct {
	refused atomic.Int32

	mu    sync.Mutex
	gone  bool
	conns []net.Conn
}

// client is an HTTP client that dials through v.
func (v *vanishing) client() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: v.dial}}
}

func (v *vanishing) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.gone {
		v.refused.Add(1)
		return nil, errGone
	}
	conn, err := new(net.Dialer).DialContext(ctx, network, addr)
	if err == nil {
		v.conns = append(v.conns, conn)
	}
	return conn, err
}

func (v *vanishing) vanish() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.gone = true
	for _, conn := range v.conns {
		conn.Close()
	}
}

// noisy writes n numbered lines to stdout and to stderr, some of them not
// UTF-8 (sent as base64).
func noisy(n int) ([]string, string, string) {
	argv := []string{"/bin/bash", "-c", `for ((i = 1; i <= $1; i++)); do printf 'out %d \377\n' $i; printf 'err %d\n' $i >&2; done`, "noisy", fmt.Sprint(n)}
	var out, errs strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&out, "out %d \xff\n", i)
		fmt.Fprintf(&errs, "err %d\n", i)
	}
	return argv, out.String(), errs.String()
}

func TestEventsResumeAfterCuts(t *testing.T) {
	tests := []struct {
		name string
		cut  testserver.Cut
	}{
		// 1000 bytes is no event boundary here: the cut falls inside a line.
		{name: "aborted mid-event", cut: testserver.Cut{Streams: 3, After: 1000}},
		{name: "ended mid-event", cut: testserver.Cut{Streams: 3, After: 1000, Clean: true}},
		// "id: 1\nevent: stdout\n" is 20 bytes: the stream ends with an
		// event that has a type and no data yet, which is no event.
		{name: "ended before the data line", cut: testserver.Cut{Streams: 1, After: 20, Clean: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { testEventsResumeAfterCuts(t, tt.cut) })
	}
}

func testEventsResumeAfterCuts(t *testing.T, cut testserver.Cut) {
	ctx := testContext(t)
	direct := newClient(t, "")
	argv, wantOut, wantErr := noisy(2000)
	p, err := direct.Start(ctx, client.StartProcessRequest{Argv: argv})
	if err != nil {
		t.Fatal(err)
	}
	proxied := newClient(t, testserver.CutStreams(t, os.Getenv("SNAPEXEC_URL"), cut))
	s, err := proxied.Events(ctx, p.ProcessId, 0)
	if err != nil {
		t.Fatal(err)
	}
	chunks := drain(t, s)
	stdout, stderr := split(t, chunks)
	if !bytes.Equal(stdout, []byte(wantOut)) || !bytes.Equal(stderr, []byte(wantErr)) {
		t.Errorf("Events through cuts: stdout %d bytes, stderr %d bytes; want %d and %d, exactly", len(stdout), len(stderr), len(wantOut), len(wantErr))
	}
	if s.Lost() != 0 {
		t.Errorf("Lost() = %d, want 0", s.Lost())
	}
	if r := s.Result(); r == nil || r.Status != client.ExitStatusExited || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Errorf("Result() = %+v, want exited 0", r)
	}
	// The same stream read without cuts has the same chunks.
	s, err = direct.Events(ctx, p.ProcessId, 0)
	if err != nil {
		t.Fatal(err)
	}
	whole := drain(t, s)
	if len(whole) != len(chunks) || whole[0].Seq != chunks[0].Seq {
		t.Errorf("uncut stream: %d chunks from seq %d; cut stream: %d from seq %d", len(whole), whole[0].Seq, len(chunks), chunks[0].Seq)
	}
}

func TestExecStreamResumesAfterACut(t *testing.T) {
	ctx := testContext(t)
	direct := newClient(t, "")
	argv, wantOut, wantErr := noisy(1000)
	id := "resume-" + fmt.Sprint(time.Now().UnixNano())
	// The cut waits until the command has ended: the server terminates a
	// streamed command whose client goes away, and this test is about the
	// output, not about that race.
	cut := newClient(t, testserver.CutStreams(t, os.Getenv("SNAPEXEC_URL"), testserver.Cut{
		Streams: 1, After: 700, Before: func() { waitEnded(ctx, t, direct, id) },
	}))
	s, err := cut.ExecStream(ctx, client.ExecRequest{ProcessId: &id, Argv: argv})
	if err != nil {
		t.Fatal(err)
	}
	if s.ProcessID() != id {
		t.Errorf("ProcessID() = %q, want %q", s.ProcessID(), id)
	}
	stdout, stderr := split(t, drain(t, s))
	if !bytes.Equal(stdout, []byte(wantOut)) || !bytes.Equal(stderr, []byte(wantErr)) {
		t.Errorf("ExecStream through a cut: stdout %d bytes, stderr %d bytes; want %d and %d, exactly", len(stdout), len(stderr), len(wantOut), len(wantErr))
	}
	if r := s.Result(); r == nil || r.Status != client.ExitStatusExited || r.ProcessId == nil || *r.ProcessId != id {
		t.Errorf("Result() = %+v, want %s exited", r, id)
	}
}

func TestExecStreamNamesItsProcess(t *testing.T) {
	ctx := testContext(t)
	c := newClient(t, "")
	s, err := c.ExecStream(ctx, client.ExecRequest{Argv: []string{"/bin/true"}})
	if err != nil {
		t.Fatal(err)
	}
	drain(t, s)
	if s.ProcessID() == "" || s.Result() == nil || s.Result().ProcessId == nil || *s.Result().ProcessId != s.ProcessID() {
		t.Errorf("ProcessID() = %q, Result() = %+v; want the same generated id", s.ProcessID(), s.Result())
	}
}

// TestStreamQuietAcrossCuts: a stream whose connections break before they
// bring an event (six in a row, each after the server's answer) goes on,
// backing off, and brings the output once.
func TestStreamQuietAcrossCuts(t *testing.T) {
	ctx := testContext(t)
	direct := newClient(t, "")
	p, err := direct.Start(ctx, client.StartProcessRequest{Argv: []string{"/bin/echo", "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	var cuts atomic.Int32
	cut := newClient(t, testserver.CutStreams(t, os.Getenv("SNAPEXEC_URL"), testserver.Cut{Streams: 6, After: 1, Before: func() { cuts.Add(1) }}))
	start := time.Now()
	s, err := cut.Events(ctx, p.ProcessId, 0)
	if err != nil {
		t.Fatal(err)
	}
	stdout, _ := split(t, drain(t, s))
	if string(stdout) != "hi\n" || cuts.Load() != 6 {
		t.Errorf("Events through %d quiet cuts: stdout %q, want %q (6 cuts)", cuts.Load(), stdout, "hi\n")
	}
	if took := time.Since(start); took < 3*time.Second {
		t.Errorf("six quiet cuts took %v, want the redials backed off (3.1 s)", took)
	}
}

// TestStreamGivesUp: once the server is gone, a stream redials five times,
// backing off, and its Next then returns an error that carries the last
// dial's.
func TestStreamGivesUp(t *testing.T) {
	ctx := testContext(t)
	id := startUp(ctx, t)
	server := &vanishing{}
	s, err := newClient(t, "", client.WithHTTPClient(server.client())).Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c, err := s.Next(); err != nil || string(c.Bytes()) != "up\n" {
		t.Fatalf("first Next() = %q, %v; want up", c.Bytes(), err)
	}
	server.vanish()
	start := time.Now()
	_, err = s.Next()
	if took := time.Since(start); err == nil || err == io.EOF || !errors.Is(err, errGone) || took > 10*time.Second {
		t.Errorf("Next() once the server is gone = %v after %v; want an error carrying %v, within 10s", err, took, errGone)
	}
	if n := server.refused.Load(); n != 5 {
		t.Errorf("%d redials before giving up, want 5", n)
	}
}

func TestStreamCancel(t *testing.T) {
	ctx := testContext(t)
	c := newClient(t, "")
	streamCtx, cancel := context.WithCancel(ctx)
	s, err := c.ExecStream(streamCtx, client.ExecRequest{Argv: []string{"/bin/sh", "-c", "echo up; exec sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(); err != nil {
		t.Fatalf("first Next() = %v", err)
	}
	cancel()
	if _, err := s.Next(); !errors.Is(err, context.Canceled) {
		t.Errorf("Next() after cancel = %v, want context.Canceled", err)
	}
	s.Close()
	// The server ends a streamed command whose client went away.
	waitEnded(ctx, t, c, s.ProcessID())
	p, err := client.Result(c.GetProcessWithResponse(ctx, s.ProcessID()))
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != client.ProcessStatusTerminated {
		t.Errorf("status after the client went away = %s, want terminated", p.Status)
	}
}

func TestErrors(t *testing.T) {
	ctx := testContext(t)
	c := newClient(t, "")
	badToken, err := client.New(os.Getenv("SNAPEXEC_URL"), client.WithToken("not-the-token-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream connect error", http.StatusBadGateway)
	}))
	defer proxy.Close()
	notSnapexec := newClient(t, proxy.URL)

	tests := []struct {
		name      string
		call      func() error
		want      client.Error
		wantInMsg string
	}{
		{
			name: "unknown process",
			call: func() error { _, err := c.Events(ctx, "no-such-process", 0); return err },
			want: client.Error{Status: 404, Code: client.ProblemCodeNotFound, Title: "Not Found"},
		},
		{
			name: "invalid request",
			call: func() error { _, err := c.Exec(ctx, client.ExecRequest{Argv: []string{""}}); return err },
			want: client.Error{Status: 400, Code: client.ProblemCodeInvalidRequest, Title: "Bad Request", Field: "argv[0]"},
		},
		{
			name:      "wrong token",
			call:      func() error { _, err := client.Result(badToken.ListProcessesWithResponse(ctx)); return err },
			want:      client.Error{Status: 401, Code: client.ProblemCodeUnauthorized, Title: "Unauthorized"},
			wantInMsg: "unauthorized (401)",
		},
		{
			name:      "process exists",
			call:      func() error { return startTwice(ctx, c) },
			want:      client.Error{Status: 409, Code: client.ProblemCodeProcessExists, Title: "Conflict", Field: "processId"},
			wantInMsg: "field processId",
		},
		{
			name:      "not a problem",
			call:      func() error { _, err := client.Result(notSnapexec.HealthzWithResponse(ctx)); return err },
			want:      client.Error{Status: 502, Title: "Bad Gateway", Detail: "upstream connect error"},
			wantInMsg: "snapexec: 502 Bad Gateway: upstream connect error",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var e *client.Error
			if !errors.As(err, &e) {
				t.Fatalf("error = %v (%T), want a *client.Error", err, err)
			}
			if e.Status != tt.want.Status || e.Code != tt.want.Code || e.Title != tt.want.Title || e.Field != tt.want.Field {
				t.Errorf("error = %+v, want %+v", *e, tt.want)
			}
			if tt.want.Detail != "" && e.Detail != tt.want.Detail {
				t.Errorf("Detail = %q, want %q", e.Detail, tt.want.Detail)
			}
			if tt.want.Code != "" && (e.RequestID == "" || e.Detail == "" || !strings.Contains(err.Error(), e.RequestID)) {
				t.Errorf("problem %+v lacks a detail or a request id, or its message %q does", *e, err)
			}
			if !strings.Contains(err.Error(), tt.wantInMsg) {
				t.Errorf("Error() = %q, want it to contain %q", err, tt.wantInMsg)
			}
			if strings.Contains(fmt.Sprintf("%+v %v", *e, err), "not-the-token") {
				t.Errorf("the error shows the token")
			}
		})
	}
}

func startTwice(ctx context.Context, c *client.Client) error {
	id := "twice-" + fmt.Sprint(time.Now().UnixNano())
	req := client.StartProcessRequest{ProcessId: &id, Argv: []string{"/bin/true"}}
	if _, err := c.Start(ctx, req); err != nil {
		return fmt.Errorf("first start: %w", err)
	}
	_, err := c.Start(ctx, req)
	return err
}

// TestUnixSocket reaches the server over a Unix domain socket the way the
// package doc shows.
func TestUnixSocket(t *testing.T) {
	ctx := testContext(t)
	sock := testserver.UnixSocket(t, os.Getenv("SNAPEXEC_URL"))
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		return new(net.Dialer).DialContext(ctx, "unix", sock)
	}
	c := newClient(t, "http://localhost", client.WithHTTPClient(&http.Client{Transport: &http.Transport{DialContext: dial}}))
	res, err := c.Exec(ctx, client.ExecRequest{Argv: []string{"/bin/echo", "over the socket"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.StdoutData()); got != "over the socket\n" {
		t.Errorf("stdout over a Unix socket = %q, want %q", got, "over the socket\n")
	}
}

func TestOutputHelpers(t *testing.T) {
	ctx := testContext(t)
	c := newClient(t, "")
	res, err := c.Exec(ctx, client.ExecRequest{Argv: []string{"/bin/bash", "-c", `printf 'caf\xc3\xa9 \x00'; printf '\xff\xfe' >&2`}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.StdoutData(), []byte("caf\u00e9 \x00"); !bytes.Equal(got, want) || res.Stdout == nil {
		t.Errorf("StdoutData() = %q (as text: %v), want %q as text", got, res.Stdout != nil, want)
	}
	if got, want := res.StderrData(), []byte{0xff, 0xfe}; !bytes.Equal(got, want) || res.StderrBase64 == nil {
		t.Errorf("StderrData() = %q (as base64: %v), want %q as base64", got, res.StderrBase64 != nil, want)
	}
}

// startUp starts a process that prints "up" and sleeps, terminated when the
// test ends, and returns its id.
func startUp(ctx context.Context, t *testing.T) string {
	t.Helper()
	direct := newClient(t, "")
	p, err := direct.Start(ctx, client.StartProcessRequest{Argv: []string{"/bin/sh", "-c", "echo up; exec sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = direct.TerminateProcessWithResponse(context.Background(), p.ProcessId) })
	return p.ProcessId
}
