package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapexec/snapexec/client"
	"github.com/snapexec/snapexec/internal/testserver"
)

// screen is what an attachment has shown so far.
type screen struct {
	t   *testing.T
	a   *client.Attachment
	out bytes.Buffer
}

// until reads the attachment until its output holds want.
func (s *screen) until(want string) {
	s.t.Helper()
	for !strings.Contains(s.out.String(), want) {
		out, err := s.a.Next()
		if err != nil {
			s.t.Fatalf("Next() before %q came: %v; output %q", want, err, s.out.String())
		}
		s.out.Write(out.Data)
	}
}

// rest reads the attachment to its end.
func (s *screen) rest() {
	s.t.Helper()
	rest, err := io.ReadAll(s.a)
	if err != nil {
		s.t.Fatalf("reading to the end: %v; output %q", err, s.out.String())
	}
	s.out.Write(rest)
}

func TestAttachResumesAfterCuts(t *testing.T) {
	ctx := testContext(t)
	direct := newClient(t, "")
	var want strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	p, err := direct.Start(ctx, client.StartProcessRequest{
		Argv: []string{"/bin/bash", "-c", `for ((i = 1; i <= 3000; i++)); do printf 'line %d\n' $i; done; exit 4`},
	})
	if err != nil {
		t.Fatal(err)
	}
	// 2000 bytes fall inside a batch and inside a line: the batch's start
	// has come, its seq message has not.
	var cuts atomic.Int32
	proxy := testserver.CutStreams(t, os.Getenv("SNAPEXEC_URL"), testserver.Cut{Streams: 3, After: 2000, Before: func() { cuts.Add(1) }})
	a, err := newClient(t, proxy).Attach(ctx, p.ProcessId, client.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	got, err := io.ReadAll(a)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() || a.Lost() != 0 {
		t.Errorf("Attach through %d cuts: %d bytes (lost %d); want %d, exactly", cuts.Load(), len(got), a.Lost(), want.Len())
	}
	if cuts.Load() != 3 {
		t.Errorf("%d cuts, want 3", cuts.Load())
	}
	if r := a.Result(); r == nil || r.Status != client.ExitStatusExited || r.ExitCode == nil || *r.ExitCode != 4 {
		t.Errorf("Result() = %+v, want exited 4", r)
	}
	// After the end, stdin is refused.
	if _, err := a.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("Write after the end = %v, want io.ErrClosedPipe", err)
	}
}

// TestAttachQuietAcrossCuts: an attachment whose connections break
// before they bring any output (six in a row, each after its handshake)
// goes on, backing off, and sees every output once and in order: what the
// process wrote before and during the cuts, and what followed.
func TestAttachQuietAcrossCuts(t *testing.T) {
	ctx := testContext(t)
	direct := newClient(t, "")
	p, err := direct.Start(ctx, client.StartProcessRequest{
		Argv:      []string{"/bin/sh", "-c", `echo one; read -r x; echo "two $x"; read -r y; echo "three $y"; exit 3`},
		PipeStdin: ptrTo(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = direct.TerminateProcessWithResponse(context.Background(), p.ProcessId) })
	var cuts atomic.Int32
	proxy := testserver.CutStreams(t, os.Getenv("SNAPEXEC_URL"), testserver.Cut{Streams: 6, After: 0, Before: func() {
		if cuts.Add(1) == 3 {
			// Output made while the attachment is cut off.
			if _, err := client.Result(direct.WriteProcessStdinWithResponse(ctx, p.ProcessId, client.StdinWrite{Data: ptrTo("a\n")})); err != nil {
				t.Errorf("stdin during the cuts: %v", err)
			}
		}
	}})
	start := time.Now()
	a, err := newClient(t, proxy).Attach(ctx, p.ProcessId, client.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s := &screen{t: t, a: a}
	s.until("one\ntwo a\n")
	// Redialled at once, then after 100 ms, doubling: the seventh
	// connection comes 3.1 s after the first. Sooner, it spins.
	if took := time.Since(start); took < 3*time.Second {
		t.Errorf("six quiet cuts took %v, want the redials backed off (3.1 s)", took)
	}
	if _, err := a.Write([]byte("b\n")); err != nil {
		t.Fatal(err)
	}
	s.rest()
	if want := "one\ntwo a\nthree b\n"; s.out.String() != want || cuts.Load() != 6 {
		t.Errorf("through %d quiet cuts the attachment shows %q, want %q (6 cuts)", cuts.Load(), s.out.String(), want)
	}
	if r := a.Result(); r == nil || r.ExitCode == nil || *r.ExitCode != 3 {
		t.Errorf("Result() = %+v, want exit 3", r)
	}
}

// TestAttachGivesUp: once the server is gone, an attachment redials five
// times, backing off, and its read then returns an error that carries the
// last dial's, within a few seconds.
func TestAttachGivesUp(t *testing.T) {
	ctx := testContext(t)
	id := startUp(ctx, t)
	server := &vanishing{}
	a, err := newClient(t, "", client.WithHTTPClient(server.client())).Attach(ctx, id, client.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	(&screen{t: t, a: a}).until("up\n")
	server.vanish()
	start := time.Now()
	_, err = a.Next()
	if took := time.Since(start); err == nil || err == io.EOF || !errors.Is(err, errGone) || took > 10*time.Second {
		t.Errorf("Next() once the server is gone = %v after %v; want an error carrying %v, within 10s", err, took, errGone)
	}
	if n := server.refused.Load(); n != 5 {
		t.Errorf("%d redials before giving up, want 5", n)
	}
	if _, err := a.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("Write after giving up = %v, want io.ErrClosedPipe", err)
	}
}

// TestAttachTypesAcrossCuts: keys typed around dropped connections reach
// the terminal, and what it shows comes once.
func TestAttachTypesAcrossCuts(t *testing.T) {
	ctx := testContext(t)
	direct := newClient(t, "")
	p, err := direct.Start(ctx, client.StartProcessRequest{
		Argv: []string{"/bin/sh", "-c", `stty -echo; echo ready; while read -r l; do echo "got $l"; done`},
		Tty:  &client.TTYSize{Cols: 80, Rows: 24},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Each of the first three connections breaks at its 50th byte. The
	// first has "ready" and its seq message (33 bytes), then the answer to
	// line 0 (14) and the start of that answer's seq message: the answer
	// came, unconfirmed, and comes again on the next connection, which is
	// to show it once. The next two begin with the answer they had not
	// confirmed and its seq (38 bytes), and break inside the next answer.
	var cuts atomic.Int32
	proxy := testserver.CutStreams(t, os.Getenv("SNAPEXEC_URL"), testserver.Cut{Streams: 3, After: 50, Before: func() { cuts.Add(1) }})
	a, err := newClient(t, proxy).Attach(ctx, p.ProcessId, client.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s := &screen{t: t, a: a}
	var want strings.Builder
	want.WriteString("ready\r\n")
	s.until(want.String())
	for i := range 6 {
		if _, err := fmt.Fprintf(a, "line %d\r", i); err != nil {
			t.Fatalf("typing line %d: %v", i, err)
		}
		fmt.Fprintf(&want, "got line %d\r\n", i)
		s.until(want.String())
	}
	if s.out.String() != want.String() || cuts.Load() != 3 {
		t.Errorf("through %d cuts the terminal shows %q, want %q (3 cuts)", cuts.Load(), s.out.String(), want.String())
	}
	if _, err := direct.TerminateProcessWithResponse(ctx, p.ProcessId); err != nil {
		t.Fatal(err)
	}
	s.rest()
	if r := a.Result(); r == nil || r.Status != client.ExitStatusTerminated {
		t.Errorf("Result() after DELETE = %+v, want terminated", r)
	}
}

// TestAttachTerminal types into a terminal, resizes it both ways, and ends
// it with Ctrl-D.
func TestAttachTerminal(t *testing.T) {
	ctx := testContext(t)
	c := newClient(t, "")
	p, err := c.Start(ctx, client.StartProcessRequest{
		Argv: []string{"/bin/sh", "-c", `stty -echo; echo ready; while read -r l; do case $l in size) stty size;; *) echo "got $l";; esac; done; exit 6`},
		Tty:  &client.TTYSize{Cols: 80, Rows: 24},
	})
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.Attach(ctx, p.ProcessId, client.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s := &screen{t: t, a: a}
	s.until("ready\r\n")
	type step struct {
		do   func() error
		want string
	}
	typed := func(text string) func() error {
		return func() error { _, err := a.Write([]byte(text)); return err }
	}
	for _, st := range []step{
		{typed("hello\r"), "got hello\r\n"},
		{typed("size\r"), "24 80\r\n"},
		{func() error { return a.Resize(100, 30) }, ""},
		{typed("size\r"), "30 100\r\n"},
		{func() error { return c.Resize(ctx, p.ProcessId, 90, 20) }, ""},
		{typed("size\r"), "20 90\r\n"},
	} {
		if err := st.do(); err != nil {
			t.Fatal(err)
		}
		if st.want != "" {
			s.until(st.want)
		}
	}
	if _, err := a.Write([]byte{4}); err != nil { // Ctrl-D: the end of input
		t.Fatal(err)
	}
	s.rest()
	if r := a.Result(); r == nil || r.ExitCode == nil || *r.ExitCode != 6 {
		t.Errorf("Result() = %+v, want exit 6; output %q", r, s.out.String())
	}
	if err := c.Resize(ctx, "no-such-process", 80, 24); !isProblem(err, client.ProblemCodeNotFound) {
		t.Errorf("Resize of an unknown process = %v, want not_found", err)
	}
}

// TestAttachLateSeesScrollback: a second attachment, from the start or
// from the first one's Seq, sees the output once.
func TestAttachLateSeesScrollback(t *testing.T) {
	ctx := testContext(t)
	c := newClient(t, "")
	p, err := c.Start(ctx, client.StartProcessRequest{
		Argv: []string{"/bin/sh", "-c", "echo one; read -r x; echo two"}, PipeStdin: ptrTo(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.Attach(ctx, p.ProcessId, client.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	s := &screen{t: t, a: first}
	s.until("one\n")
	late, err := c.Attach(ctx, p.ProcessId, client.AttachOptions{AfterSeq: first.Seq()})
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	if _, err := first.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	s.rest()
	rest, err := io.ReadAll(late)
	if s.out.String() != "one\ntwo\n" || string(rest) != "two\n" || err != nil {
		t.Errorf("first attachment %q, late one %q (%v); want %q and %q", s.out.String(), rest, err, "one\ntwo\n", "two\n")
	}
}

func TestAttachErrors(t *testing.T) {
	ctx := testContext(t)
	c := newClient(t, "")
	p, err := c.Start(ctx, client.StartProcessRequest{Argv: []string{"/bin/true"}})
	if err != nil {
		t.Fatal(err)
	}
	wrongToken, err := client.New(os.Getenv("SNAPEXEC_URL"), client.WithToken("wrong-token-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		c    *client.Client
		id   string
		opts client.AttachOptions
		want client.ProblemCode
	}{
		{name: "unknown process", c: c, id: "no-such-process", want: client.ProblemCodeNotFound},
		{name: "seq never sent", c: c, id: p.ProcessId, opts: client.AttachOptions{AfterSeq: 1 << 40}, want: client.ProblemCodeInvalidRequest},
		{name: "wrong token", c: wrongToken, id: p.ProcessId, want: client.ProblemCodeUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := tt.c.Attach(ctx, tt.id, tt.opts)
			if err == nil {
				a.Close()
			}
			if !isProblem(err, tt.want) {
				t.Errorf("Attach(%q, %+v) = %v, want a problem %s", tt.id, tt.opts, err, tt.want)
			}
		})
	}
}

// TestAttachUnixSocket attaches over a Unix domain socket, the client's
// own HTTP client dialing it.
func TestAttachUnixSocket(t *testing.T) {
	ctx := testContext(t)
	sock := testserver.UnixSocket(t, os.Getenv("SNAPEXEC_URL"))
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		return new(net.Dialer).DialContext(ctx, "unix", sock)
	}
	c := newClient(t, "http://localhost", client.WithHTTPClient(&http.Client{Transport: &http.Transport{DialContext: dial}}))
	p, err := c.Start(ctx, client.StartProcessRequest{Argv: []string{"/bin/echo", "over the socket"}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.Attach(ctx, p.ProcessId, client.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if got, err := io.ReadAll(a); string(got) != "over the socket\n" || err != nil {
		t.Errorf("attached over a Unix socket: %q (%v), want %q", got, err, "over the socket\n")
	}
}

// TestAttachClose: Close ends a Read that waits, and the process runs on.
func TestAttachClose(t *testing.T) {
	ctx := testContext(t)
	c := newClient(t, "")
	p, err := c.Start(ctx, client.StartProcessRequest{Argv: []string{"/bin/sleep", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.TerminateProcessWithResponse(context.Background(), p.ProcessId) })
	a, err := c.Attach(ctx, p.ProcessId, client.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := a.Read(make([]byte, 1))
		read <- err
	}()
	a.Close()
	if err := <-read; err == nil || err == io.EOF {
		t.Errorf("Read during Close = %v, want an error", err)
	}
	got, err := client.Result(c.GetProcessWithResponse(ctx, p.ProcessId))
	if err != nil || got.Status != client.ProcessStatusRunning {
		t.Errorf("after Close the process is %+v (%v), want running", got, err)
	}
}

func isProblem(err error, code client.ProblemCode) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Code == code
}

func ptrTo[T any](v T) *T { return &v }
