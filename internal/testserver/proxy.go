package testserver

import (
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// Cut says which event streams and WebSockets CutStreams breaks, and how.
type Cut struct {
	// Streams is how many event streams (text/event-stream answers) or
	// WebSocket connections to break, the first ones; later ones pass
	// unchanged.
	Streams int
	// After is how many bytes of each broken stream's body (of a
	// WebSocket, of what the server sends) pass first.
	After int64
	// Clean ends a broken answer as if it were complete, as a proxy that
	// times a stream out may; otherwise the connection is aborted, as a
	// network failure does. Either way the server sees its client gone. A
	// WebSocket is aborted either way.
	Clean bool
	// Before, when not nil, runs just before each cut: a test can wait
	// there for the state it wants the cut to find.
	Before func()
}

// CutStreams returns the URL of a reverse proxy to the server at serverURL
// (a Server's URL) that breaks event streams and WebSockets as cut says, as
// a dropped connection would. Everything else passes unchanged. The proxy
// closes in t.Cleanup.
func CutStreams(t testing.TB, serverURL string, cut Cut) string {
	t.Helper()
	target, err := url.Parse(serverURL)
	if err != nil {
		t.Fatal(err)
	}
	var left atomic.Int64
	left.Store(int64(cut.Streams))
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) },
		ModifyResponse: func(resp *http.Response) error {
			upgrade := resp.StatusCode == http.StatusSwitchingProtocols
			if !upgrade && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") || left.Add(-1) < 0 {
				return nil
			}
			end := errCut
			if cut.Clean && !upgrade {
				end = io.EOF
			}
			body := &cutBody{ReadCloser: resp.Body, left: cut.After, before: cut.Before, end: end}
			if upgrade {
				// The proxy relays an upgraded connection only through a
				// body it can also write to.
				resp.Body = cutConn{cutBody: body, Writer: resp.Body.(io.Writer)}
				return nil
			}
			resp.Body = body
			return nil
		},
		// A cut is the point; the proxy need not log it.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server may answer (an event stream's headers) before the
		// proxy has read the end of the request's body; net/http then
		// refuses that read, and the proxy's transport breaks the stream
		// where no cut was asked for (TestExecStreamResumesAfterACut failed
		// about one run in a hundred). A proxy in front of snapexec must
		// relay both ways at once.
		_ = http.NewResponseController(w).EnableFullDuplex()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// errCut ends a body that CutStreams breaks; the reverse proxy then aborts
// the client's connection.
var errCut = errors.New("testserver: stream cut")

// cutBody passes `left` bytes on, then ends with end.
type cutBody struct {
	io.ReadCloser
	left   int64
	before func()
	end    error
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		if b.before != nil {
			b.before()
			b.before = nil
		}
		return 0, b.end
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// cutConn is an upgraded connection whose reads from the server cutBody
// breaks; writes to the server pass.
type cutConn struct {
	*cutBody
	io.Writer
}

// UnixSocket returns the path of a Unix domain socket that relays each
// connection, byte for byte, to the server at serverURL: a client's way
// over a socket can be tested against a server listening on TCP. The
// socket closes in t.Cleanup.
func UnixSocket(t testing.TB, serverURL string) string {
	t.Helper()
	target, err := url.Parse(serverURL)
	if err != nil {
		t.Fatal(err)
	}
	// A short directory: a socket path must fit in about 100 bytes, and
	// t.TempDir's may not.
	dir, err := os.MkdirTemp("", "snapexec-sock-")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "snapexec.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ln.Close()
		os.RemoveAll(dir)
	})
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go relay(conn, target.Host)
		}
	}()
	return sock
}

func relay(conn net.Conn, addr string) {
	defer conn.Close()
	up, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer up.Close()
	go func() {
		_, _ = io.Copy(up, conn)
		up.Close()
	}()
	_, _ = io.Copy(conn, up)
}
