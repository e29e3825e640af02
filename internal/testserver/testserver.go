// Package testserver runs the real snapexec server for the tests of other
// packages (the client, the CLI, deploy/, web/): ./cmd/server is built once
// per test binary, started on 127.0.0.1:0 with a random token, and stopped
// when the test ends, so a test talks to the binary users run.
//
// The binary is built inside the test binary's directory, which `go test`
// removes when it is done; a test binary kept with `go test -c` and run by
// hand leaves a testserver-* directory beside itself.
package testserver

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Options says how to start a server. The zero value is a server with a
// random token and the default flags.
type Options struct {
	// Args are server flags, given after --addr 127.0.0.1:0 (so a later
	// --addr wins).
	Args []string
	// Env holds KEY=VALUE variables for the server, over the test's own
	// environment less its SNAPEXEC_* variables.
	Env []string
	// NoToken starts the server without a token; it still listens on
	// loopback only.
	NoToken bool
}

// Server is a running server.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:PORT.
	URL string
	// Token is the bearer token every route but the probes requires, or ""
	// with Options.NoToken.
	Token string

	cmd      *exec.Cmd
	log      *logBuffer
	exited   chan struct{}
	waitErr  error
	stopOnce sync.Once
	stopErr  error
}

// Start starts a server for t and stops it in t.Cleanup. A failed test
// gets the server's log; a server that does not stop cleanly fails it.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := Launch(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("%v; server log:\n%s", err, s.Log())
			return
		}
		if t.Failed() {
			t.Logf("server log:\n%s", s.Log())
		}
	})
	return s
}

// Launch starts a server that the caller stops with Stop. It is for
// TestMain, where there is no testing.TB; tests use Start.
func Launch(opts Options) (*Server, error) {
	bin, err := build()
	if err != nil {
		return nil, err
	}
	s := &Server{log: &logBuffer{}, exited: make(chan struct{})}
	env := make([]string, 0, len(os.Environ())+len(opts.Env)+1)
	for _, kv := range os.Environ() {
		// A developer's own SNAPEXEC_TOKEN or SNAPEXEC_ADDR must not reach
		// the server under test.
		if !strings.HasPrefix(kv, "SNAPEXEC_") {
			env = append(env, kv)
		}
	}
	if !opts.NoToken {
		s.Token = randomToken()
		env = append(env, "SNAPEXEC_TOKEN="+s.Token)
	}
	env = append(env, opts.Env...)

	listening := make(chan string, 1)
	s.cmd = exec.Command(bin, append([]string{"--addr", "127.0.0.1:0"}, opts.Args...)...)
	s.cmd.Env = env
	s.cmd.Stdout = &stdoutWatcher{log: s.log, listening: listening}
	s.cmd.Stderr = s.log
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("testserver: start %s: %w", bin, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()

	select {
	case s.URL = <-listening:
	case <-s.exited:
		return nil, fmt.Errorf("testserver: the server exited before listening (%v); log:\n%s", s.waitErr, s.Log())
	case <-time.After(30 * time.Second):
		_ = s.Stop()
		return nil, fmt.Errorf("testserver: no listening line within 30 s; log:\n%s", s.Log())
	}
	if err := s.waitHealthy(30 * time.Second); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("testserver: %w; log:\n%s", err, s.Log())
	}
	return s, nil
}

// waitHealthy polls /healthz until it answers 200, the server exits, or
// the bound passes.
func (s *Server) waitHealthy(bound time.Duration) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(bound)
	for {
		resp, err := hc.Get(s.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		select {
		case <-s.exited:
			return fmt.Errorf("the server exited (%v) before /healthz answered", s.waitErr)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("/healthz did not answer 200 within %s: %v", bound, err)
		}
	}
}

// Stop sends the server SIGTERM, as an orchestrator would, and waits for
// it to drain; a server still running after 20 s is killed. It returns an
// error when the server did not exit with status 0. Calls after the first
// return the first's result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		select {
		case <-s.exited:
		default:
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.exited:
			case <-time.After(20 * time.Second):
				_ = s.cmd.Process.Kill()
				<-s.exited
				s.stopErr = errors.New("testserver: the server did not stop within 20 s of SIGTERM and was killed")
				return
			}
		}
		if s.waitErr != nil {
			s.stopErr = fmt.Errorf("testserver: the server exited with %v", s.waitErr)
		}
	})
	return s.stopErr
}

// Pid is the server process's id, for a test that measures it (its memory,
// its descendants).
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Log returns what the server has written so far: its listening line and
// its JSON log.
func (s *Server) Log() string { return s.log.String() }

// build builds ./cmd/server once per test binary and returns its path.
var build = sync.OnceValues(func() (string, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("testserver: go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	if root == "." || root == "" {
		return "", errors.New("testserver: not inside the snapexec module (go env GOMOD is empty)")
	}
	dir, err := buildDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "snapexec-server")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/server")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testserver: go build ./cmd/server: %w\n%s", err, out)
	}
	return bin, nil
})

// buildDir is a new directory beside the test binary, which go test
// removes with its work directory, or a temporary one when that is not
// writable.
func buildDir() (string, error) {
	if exe, err := os.Executable(); err == nil {
		if dir, err := os.MkdirTemp(filepath.Dir(exe), "testserver-"); err == nil {
			return dir, nil
		}
	}
	dir, err := os.MkdirTemp("", "snapexec-testserver-")
	if err != nil {
		return "", fmt.Errorf("testserver: %w", err)
	}
	return dir, nil
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// logBuffer collects the server's output for failure messages; the
// server's stdout and stderr copiers and the test share it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// listenPrefix starts the line the server prints on stdout once it listens.
const listenPrefix = "snapexec listening on "

// stdoutWatcher copies the server's stdout into the log and sends the URL
// of its listening line, once.
type stdoutWatcher struct {
	log       *logBuffer
	listening chan<- string
	line      []byte
	found     bool
}

func (w *stdoutWatcher) Write(p []byte) (int, error) {
	_, _ = w.log.Write(p)
	if w.found {
		return len(p), nil
	}
	w.line = append(w.line, p...)
	for {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			return len(p), nil
		}
		if url, ok := strings.CutPrefix(string(w.line[:i]), listenPrefix); ok {
			w.found, w.line = true, nil
			w.listening <- strings.TrimSpace(url)
			return len(p), nil
		}
		w.line = w.line[i+1:]
	}
}
