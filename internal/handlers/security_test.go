package handlers

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/snapexec/snapexec/api"
	"github.com/snapexec/snapexec/internal/service"
)

const testToken = "tok-0123456789abcdef"

// spyBody is a request body that records whether anything read it.
type spyBody struct {
	read atomic.Bool
	r    io.Reader
}

func (b *spyBody) Read(p []byte) (int, error) {
	b.read.Store(true)
	return b.r.Read(p)
}

func (b *spyBody) Close() error { return nil }

// TestRefusedBodiesAreNeverRead: a request that no route takes a body for, or
// that the checks refuse, is answered from its headers alone, and its
// connection closes rather than being drained for the next request.
func TestRefusedBodiesAreNeverRead(t *testing.T) {
	h := newRouterWith(t, okExecutor(), RouterOptions{Security: Security{Token: testToken, MaxBodyBytes: 1 << 20}})
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	tests := []struct {
		name, method, path string
		headers            map[string]string
		size               int64
		want               int
	}{
		{"public path, no token", "POST", "/healthz", nil, 512 << 10, 405},
		{"public path, 8 MiB", "POST", "/healthz", nil, 8 << 20, 413},
		{"public GET with a body", "GET", "/healthz", nil, 1 << 10, 200},
		{"readiness with a body", "GET", "/readyz", nil, 1 << 10, 200},
		{"dashboard page with a body", "GET", "/", nil, 1 << 10, 404},
		{"no token", "POST", "/exec", nil, 1 << 10, 401},
		{"wrong token", "POST", "/exec", map[string]string{"Authorization": "Bearer nope"}, 1 << 10, 401},
		{"rebinding Host", "POST", "/exec", map[string]string{"Host": "evil.example"}, 1 << 10, 421},
		{"cross-site Origin", "POST", "/exec", map[string]string{"Origin": "http://evil.example"}, 1 << 10, 403},
		{"declared length beyond the limit", "POST", "/exec", auth, 2 << 20, 413},
		{"no such route", "POST", "/nope", auth, 1 << 10, 404},
		{"route without a body", "POST", "/processes/p-1/terminate", auth, 1 << 10, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := &spyBody{r: strings.NewReader(strings.Repeat(" ", int(tt.size)))}
			req := localRequest(tt.method, tt.path, nil)
			req.Body, req.ContentLength = body, tt.size
			req.Header.Set("Content-Type", "application/json")
			for k, v := range tt.headers {
				if k == "Host" {
					req.Host = v
				}
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Errorf("%s %s = %d %s, want %d", tt.method, tt.path, rec.Code, rec.Body, tt.want)
			}
			if body.read.Load() {
				t.Errorf("%s %s read the request body, want it answered from the headers alone", tt.method, tt.path)
			}
			if got := rec.Header().Get("Connection"); got != "close" {
				t.Errorf("%s %s Connection = %q, want close: an unread body must not be drained", tt.method, tt.path, got)
			}
		})
	}
	t.Run("a read body keeps the connection", func(t *testing.T) {
		req := localRequest("POST", "/exec", strings.NewReader(`{"argv":["true"]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+testToken)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 || rec.Header().Get("Connection") != "" {
			t.Errorf("POST /exec = %d Connection %q, want 200 and no Connection header", rec.Code, rec.Header().Get("Connection"))
		}
	})
}

// serveRouter serves h on 127.0.0.1 with the settings run gives http.Server
// that matter here.
func serveRouter(t *testing.T, h http.Handler, limit *ConnLimit) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ReadHeaderTimeout = 10 * time.Second
	if limit != nil {
		srv.Config.ConnContext = limit.ConnContext
		srv.Config.ConnState = limit.ConnState
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// rawRequest writes head (CRLF line ends are added) and then body on a new
// connection to srv, and returns the connection and a reader of its answers.
func rawRequest(t *testing.T, srv *httptest.Server, head, body string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if head != "" {
		if _, err := io.WriteString(c, strings.ReplaceAll(head, "\n", "\r\n")+"\r\n"+body); err != nil {
			t.Fatal(err)
		}
	}
	return c, bufio.NewReader(c)
}

// readAnswer reads one response from br within 10 s.
func readAnswer(t *testing.T, c net.Conn, br *bufio.Reader) (*http.Response, string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// closedWithin reports whether the server closed c (a read ends in EOF or a
// reset) within d.
func closedWithin(c net.Conn, br *bufio.Reader, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := br.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func TestBodyDeadline(t *testing.T) {
	h := newRouterWith(t, okExecutor(), RouterOptions{Security: Security{Token: testToken}, BodyTimeout: 200 * time.Millisecond})
	srv := serveRouter(t, h, nil)
	head := "POST /exec HTTP/1.1\nHost: 127.0.0.1\nAuthorization: Bearer " + testToken +
		"\nContent-Type: application/json\nContent-Length: 100\n"
	c, br := rawRequest(t, srv, head, `{"argv":`) // and no more
	resp, body := readAnswer(t, c, br)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(body, `"code":"body_timeout"`) {
		t.Errorf("a body that stops arriving = %d %s, want 408 body_timeout", resp.StatusCode, body)
	}
	if !closedWithin(c, br, 5*time.Second) {
		t.Errorf("the connection of a body that timed out stayed open")
	}
}

// TestBodyDeadlineEndsWithTheBody: the deadline bounds the body's arrival,
// not the request: a command that runs longer than it is not cut.
func TestBodyDeadlineEndsWithTheBody(t *testing.T) {
	const deadline = 200 * time.Millisecond
	slow := &fakeService{ExecFn: func(ctx context.Context, in service.ExecInput) (service.ExecOutput, error) {
		select {
		case <-time.After(4 * deadline):
			return okExecutor().ExecFn(ctx, in)
		case <-ctx.Done():
			return service.ExecOutput{}, ctx.Err()
		}
	}}
	srv := serveRouter(t, newRouterWith(t, slow, RouterOptions{BodyTimeout: deadline}), nil)
	resp, err := http.Post(srv.URL+"/exec", "application/json", strings.NewReader(`{"argv":["true"]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("a command longer than the body deadline = %d %s, want 200", resp.StatusCode, b)
	}
}

func TestUnroutedRequestsShareOneRouteLabel(t *testing.T) {
	var logs strings.Builder
	h, err := NewRouter(New(okExecutor().deps(), api.Spec, "test"), zerolog.New(&logs), RouterOptions{Security: Security{Token: testToken}})
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"evil-1.example", "evil-2.example:99"} {
		req := localRequest("GET", "/stats", nil)
		req.Host = host
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	h.ServeHTTP(httptest.NewRecorder(), localRequest("GET", "/stats", nil))        // 401
	h.ServeHTTP(httptest.NewRecorder(), localRequest("GET", "/no/such/path", nil)) // 404
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(line, `"message":"request"`) && !strings.Contains(line, `"route":"unrouted"`) {
			t.Errorf("access log line %s, want route unrouted", line)
		}
	}
}

// TestBearerScheme: the scheme of Authorization is case-insensitive (RFC
// 9110, section 11.1) and one or more spaces follow it; another scheme, or
// none, is refused.
func TestBearerScheme(t *testing.T) {
	h := newRouterWith(t, okExecutor(), RouterOptions{Security: Security{Token: testToken, MaxBodyBytes: 1 << 20}})
	for header, want := range map[string]int{
		"Bearer " + testToken:       200,
		"bearer " + testToken:       200,
		"BEARER " + testToken:       200,
		"Bearer  " + testToken:      200,
		"Basic " + testToken:        401,
		"Bearer" + testToken:        401,
		testToken:                   401,
		"Bearer " + testToken + "x": 401,
	} {
		req := localRequest(http.MethodPost, "/exec", strings.NewReader(`{"argv":["true"]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", header)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Authorization %q = %d, want %d", header, rec.Code, want)
		}
	}
}
