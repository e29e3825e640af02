package main

import (
	"github.com/rs/zerolog"

	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestListenUnix: unix:PATH listens on a socket only its owner may use,
// which appears with that mode already set, replaces a stale socket that no
// server answers on, refuses one a server answers on and anything that is
// not a socket, and is removed on close.
func TestListenUnix(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.sock")
	ln, err := listen("unix:"+path, zerolog.Nop())
	if err != nil {
		t.Fatalf("listen(unix:%s) error %v", path, err)
	}
	if got := listenURL(ln); got != "unix:"+path {
		t.Errorf("listenURL() = %q, want unix:%s", got, path)
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the socket is %v (%v), want a socket with mode 0600", fi.Mode(), err)
	}
	if leftovers, _ := os.ReadDir(dir); len(leftovers) != 1 {
		t.Errorf("%d entries in the socket's directory, want the socket alone", len(leftovers))
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(ln)
	c := http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return new(net.Dialer).DialContext(ctx, "unix", path)
	}}}
	resp, err := c.Get("http://localhost/")
	if err != nil {
		t.Fatalf("GET over the socket: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok" {
		t.Errorf("GET over the socket = %q, want ok", body)
	}
	if _, err := listen("unix:"+path, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "answers") {
		t.Errorf("a second listen on a live socket: error %v, want a refusal naming the server that answers", err)
	}
	srv.Close()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after close the socket still exists (%v)", err)
	}

	// A socket left by a server that died: nothing answers on it.
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	syscall.Close(fd)
	ln, err = listen("unix:"+path, zerolog.Nop())
	if err != nil {
		t.Fatalf("listen over a stale socket: %v", err)
	}
	ln.Close()

	plain := filepath.Join(dir, "file")
	if err := os.WriteFile(plain, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := listen("unix:"+plain, zerolog.Nop()); err == nil {
		t.Error("listen over a regular file succeeded, want a refusal")
	}
	if b, _ := os.ReadFile(plain); string(b) != "keep me" {
		t.Errorf("the regular file now holds %q, want it untouched", b)
	}
	if _, err := listen("unix:relative.sock", zerolog.Nop()); err == nil {
		t.Error("listen on a relative socket path succeeded, want a refusal")
	}
}

// TestListenTCP: a host:port listens on TCP, and its URL is http://.
func TestListenTCP(t *testing.T) {
	ln, err := listen("127.0.0.1:0", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if got := listenURL(ln); !strings.HasPrefix(got, "http://127.0.0.1:") {
		t.Errorf("listenURL() = %q, want http://127.0.0.1:PORT", got)
	}
}

// TestServesOnAUnixSocket: the whole server on --addr unix:PATH, reached
// without a token (the socket's mode is the authentication), and its socket
// removed when it stops.
func TestServesOnAUnixSocket(t *testing.T) {
	if inProcessServers.Add(1) > 1 {
		inProcessServers.Add(-1)
		t.Fatal("a server already runs in this process")
	}
	path := filepath.Join(t.TempDir(), "snapexec.sock")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, logs := &syncBuffer{}, &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"snapexec", "--addr", "unix:" + path, "--grace", "300ms"}, nil, strings.NewReader(""), stdout, logs)
		inProcessServers.Add(-1)
		done <- err
	}()
	c := http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return new(net.Dialer).DialContext(ctx, "unix", path)
	}}}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stdout.String(), "listening on unix:"+path+"\n") {
		if time.Now().After(deadline) {
			t.Fatalf("no listening line naming unix:%s; stdout %q; logs:\n%s", path, stdout, logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	resp, err := c.Post("http://localhost/exec", "application/json", strings.NewReader(`{"argv":["/bin/echo","hi"]}`))
	if err != nil {
		t.Fatalf("POST /exec over the socket: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"stdout":"hi\n"`) {
		t.Errorf("POST /exec over the socket = %d %s, want 200 with stdout hi", resp.StatusCode, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run() = %v, want nil", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run() did not return after cancel")
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after the server stopped its socket still exists (%v)", err)
	}
}

// TestCheckAddrs: an address is HOST:PORT or unix:PATH, and none is given
// twice; what is refused names the address.
func TestCheckAddrs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		addrs []string
		bad   string // a word the refusal names; "" accepts
	}{
		{"one TCP", []string{"127.0.0.1:8080"}, ""},
		{"TCP and a socket", []string{"127.0.0.1:8080", "unix:/run/snapexec.sock"}, ""},
		{"IPv6 and IPv4", []string{"[::1]:8080", "127.0.0.1:8080"}, ""},
		{"no port", []string{"127.0.0.1:8080", "localhost"}, "localhost"},
		{"empty", []string{""}, "HOST:PORT"},
		{"socket without a path", []string{"unix:"}, "no socket path"},
		{"TCP twice", []string{"127.0.0.1:8080", "127.0.0.1:8080"}, "twice"},
		{"a socket twice, spelt apart", []string{"unix:/run/s.sock", "unix:/run/./s.sock"}, "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkAddrs(tc.addrs)
			switch {
			case tc.bad == "" && err != nil:
				t.Errorf("checkAddrs(%q) = %v, want nil", tc.addrs, err)
			case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
				t.Errorf("checkAddrs(%q) = %v, want a refusal naming %q", tc.addrs, err, tc.bad)
			}
		})
	}
}

// TestListenAllClosesWhatItOpened: when one address cannot be listened on,
// the server holds none of the others (the socket made before it is gone).
func TestListenAllClosesWhatItOpened(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	path := filepath.Join(t.TempDir(), "s.sock")
	lns, err := listenAll([]string{"unix:" + path, taken.Addr().String()}, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), taken.Addr().String()) {
		for _, ln := range lns {
			ln.Close()
		}
		t.Fatalf("listenAll(a socket, a port in use) error %v, want one naming %s", err, taken.Addr())
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket listened on first still exists (%v)", err)
	}
}

// TestAddrFlagAndVariable: --addr repeats; SNAPEXEC_ADDR is a
// comma-separated list, used only when no --addr is given; every address
// must be loopback or a socket unless a token is set.
func TestAddrFlagAndVariable(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want []string
		bad  string
	}{
		{"default", nil, "", []string{"127.0.0.1:8080"}, ""},
		{"flag repeated", []string{"--addr", "127.0.0.1:1", "--addr", "unix:/tmp/s.sock"}, "", []string{"127.0.0.1:1", "unix:/tmp/s.sock"}, ""},
		{"variable", nil, "127.0.0.1:2, unix:/tmp/s.sock", []string{"127.0.0.1:2", "unix:/tmp/s.sock"}, ""},
		{"flag over variable", []string{"--addr", "127.0.0.1:1"}, "127.0.0.1:2", []string{"127.0.0.1:1"}, ""},
		{"one address not loopback", []string{"--addr", "127.0.0.1:1", "--addr", "0.0.0.0:1"}, "", nil, "0.0.0.0:1 without a token"},
		{"a bad one among good", nil, "127.0.0.1:2,,unix:/tmp/s.sock", nil, "HOST:PORT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string {
				if k == "SNAPEXEC_ADDR" {
					return tc.env
				}
				return ""
			}
			c, err := parseConfig(append([]string{"snapexec"}, tc.args...), getenv, io.Discard)
			switch {
			case tc.bad != "":
				if err == nil || !strings.Contains(err.Error(), tc.bad) {
					t.Errorf("parseConfig(%q, SNAPEXEC_ADDR=%q) error %v, want one with %q", tc.args, tc.env, err, tc.bad)
				}
			case err != nil:
				t.Errorf("parseConfig(%q, SNAPEXEC_ADDR=%q) error %v", tc.args, tc.env, err)
			case !slices.Equal(c.addrs, tc.want):
				t.Errorf("parseConfig(%q, SNAPEXEC_ADDR=%q) addrs = %q, want %q", tc.args, tc.env, c.addrs, tc.want)
			}
		})
	}
}

// TestServesOnSeveralAddresses: one server on a port and a socket at once is
// one server: a process started through one address is seen through the
// other, and both close at shutdown (the socket removed).
func TestServesOnSeveralAddresses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snapexec.sock")
	srv := startServer(t, nil, "--addr", "unix:"+path)
	overSocket := http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return new(net.Dialer).DialContext(ctx, "unix", path)
	}}}
	resp, err := overSocket.Post("http://localhost/processes", "application/json", strings.NewReader(`{"processId":"both","argv":["/bin/echo","hi"]}`))
	if err != nil {
		t.Fatalf("POST /processes over the socket: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /processes over the socket = %d, want a started process", resp.StatusCode)
	}
	if code, body, _ := srv.do(t, "GET", "/processes/both", "", nil); code != http.StatusOK || !strings.Contains(body, `"both"`) {
		t.Errorf("GET /processes/both over TCP = %d %s, want the process started over the socket", code, body)
	}
	srv.stop(t)
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after the server stopped its socket still exists (%v)", err)
	}
	if _, err := http.Get(srv.url + "/healthz"); err == nil {
		t.Errorf("GET %s/healthz after the stop answered, want the port closed", srv.url)
	}
}

// TestRunRefusesATakenAddress: a server one of whose addresses is taken does
// not start, says which, and leaves none of the others listening, whichever
// comes first.
func TestRunRefusesATakenAddress(t *testing.T) {
	if inProcessServers.Add(1) > 1 {
		inProcessServers.Add(-1)
		t.Fatal("a server already runs in this process")
	}
	defer inProcessServers.Add(-1)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, first := range []string{"socket", "taken"} {
		t.Run(first+" first", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "snapexec.sock")
			addrs := []string{"unix:" + path, taken.Addr().String()}
			if first == "taken" {
				addrs[0], addrs[1] = addrs[1], addrs[0]
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			stdout := &syncBuffer{}
			err := run(ctx, []string{"snapexec", "--addr", addrs[0], "--addr", addrs[1]}, nil, strings.NewReader(""), stdout, &syncBuffer{})
			if err == nil || !strings.Contains(err.Error(), taken.Addr().String()) {
				t.Errorf("run(--addr %s --addr %s) = %v, want an error naming %s", addrs[0], addrs[1], err, taken.Addr())
			}
			if strings.Contains(stdout.String(), "listening") {
				t.Errorf("stdout %q says it listens, want nothing", stdout)
			}
			if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the socket of the server that did not start exists (%v)", err)
			}
		})
	}
}
