package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/handlers"
)

// unixPrefix marks a listen address that is a Unix domain socket's path.
const unixPrefix = "unix:"

// checkAddrs refuses a list of listen addresses the server could not serve
// as given: one that is neither HOST:PORT nor unix:PATH, or one given twice
// (a socket's path compared cleaned), which would fail to bind only after
// the first had.
func checkAddrs(addrs []string) error {
	seen := make(map[string]bool, len(addrs))
	for _, addr := range addrs {
		key := addr
		if path, ok := strings.CutPrefix(addr, unixPrefix); ok {
			if path == "" {
				return fmt.Errorf("--addr %q: no socket path after unix:", addr)
			}
			key = unixPrefix + filepath.Clean(path)
		} else if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("--addr %q: want HOST:PORT or unix:/PATH (%w)", addr, err)
		}
		if seen[key] {
			return fmt.Errorf("--addr %s is given twice", addr)
		}
		seen[key] = true
	}
	return nil
}

// listenAll listens on every address, in order; when one fails it closes
// those already open, so that a server that does not start holds none.
func listenAll(addrs []string, log zerolog.Logger) ([]net.Listener, error) {
	lns := make([]net.Listener, 0, len(addrs))
	for _, addr := range addrs {
		ln, err := listen(addr, log)
		if err != nil {
			for _, open := range lns {
				open.Close()
			}
			return nil, err
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

// listen listens on addr: a TCP host:port, or unix:PATH, a socket that only
// the server's user may connect to (mode 0600: the file's permissions are the
// authentication, as with Docker's and containerd's sockets). The socket is
// made in a private directory beside PATH and renamed into place, so that it
// never exists with a wider mode; a stale socket that nothing answers on is
// replaced, while a live one, or anything that is not a socket, is an error.
// Closing the listener removes the socket. A connection of a command the
// server confined to a network of its own is refused (confinedChild) and
// logged to log.
func listen(addr string, log zerolog.Logger) (net.Listener, error) {
	path, ok := strings.CutPrefix(addr, unixPrefix)
	if !ok {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("--addr %s: %w", addr, err)
		}
		return ln, nil
	}
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("--addr %s: the socket's path must be absolute", addr)
	}
	if err := clearStaleSocket(path); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".snapexec-sock-")
	if err != nil {
		return nil, fmt.Errorf("--addr %s: %w", addr, err)
	}
	defer os.RemoveAll(tmp)
	staged := filepath.Join(tmp, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: staged, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("--addr %s: %w", addr, err)
	}
	ln.SetUnlinkOnClose(false) // the socket moves; unixListener removes it
	if err := os.Chmod(staged, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("--addr %s: %w", addr, err)
	}
	if err := os.Rename(staged, path); err != nil {
		ln.Close()
		return nil, fmt.Errorf("--addr %s: %w", addr, err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("--addr %s: %w", addr, err)
	}
	return &unixListener{UnixListener: ln, path: path, file: fi, log: log}, nil
}

// clearStaleSocket removes path when it is a socket that no server answers
// on; it leaves nothing else.
func clearStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--addr unix:%s: %w", path, err)
	case fi.Mode().Type() != os.ModeSocket:
		return fmt.Errorf("--addr unix:%s: the path exists and is not a socket; not replacing it", path)
	}
	conn, err := net.Dial("unix", path)
	if err == nil {
		conn.Close()
		return fmt.Errorf("--addr unix:%s: a server already answers on this socket", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("--addr unix:%s: %w", path, err)
	}
	return os.Remove(path)
}

// unixListener is a socket listener renamed into place: Close removes the
// socket it made, unless another has taken its path meanwhile.
type unixListener struct {
	*net.UnixListener
	path string
	file os.FileInfo
	log  zerolog.Logger
}

// Addr is the socket's path.
func (l *unixListener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

// Accept returns the next connection but a confined child's
// (confinedChild), which it answers 403 and closes.
func (l *unixListener) Accept() (net.Conn, error) {
	for {
		c, err := l.UnixListener.AcceptUnix()
		if err != nil {
			return nil, err
		}
		if pid, refused := confinedChild(c); refused {
			go refuseConfined(c, l.log, pid)
			continue
		}
		return c, nil
	}
}

// confinedChild reports whether the peer of c is a process this server
// started (or one of its descendants) under a sandbox with a network of
// its own (none, loopback), and its pid. Such a process has no way to the
// server's TCP address, and must have none through its socket either: the
// socket's file is reachable from the sandbox (its mount namespace keeps
// the host's paths, and root there keeps dac_override), and a server with
// no token would run for it a command with no sandbox at all. A process in
// the server's own network namespace (an unsandboxed command, one with
// network full, which reaches the TCP address anyway) or not descended from
// the server (a container sharing the socket) is let through; one whose
// namespace cannot be read (it has gone, with its descriptor handed on) is
// refused.
func confinedChild(c *net.UnixConn) (int, bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, true
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || credErr != nil {
		return 0, true
	}
	self := os.Getpid()
	if cred.Pid == 0 || int(cred.Pid) == self {
		// Not in this pid namespace (not a child of ours), or this very
		// process (whose main thread may be in a command's namespace).
		return int(cred.Pid), false
	}
	// This thread's namespace, not /proc/self's, which is the main
	// thread's: the sandbox joins a command's namespace on a thread that
	// never runs anything else again, and that thread may be the main one.
	mine, err := os.Readlink("/proc/thread-self/ns/net")
	if err != nil {
		return int(cred.Pid), false // no namespaces to tell apart
	}
	theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", cred.Pid))
	if err != nil {
		return int(cred.Pid), true
	}
	if theirs == mine {
		return int(cred.Pid), false
	}
	return int(cred.Pid), exec.DescendsFrom(int(cred.Pid), self)
}

// refuseConfined answers a confined child's connection with a 403 problem
// (sandboxed_client) and closes it, without reading a request: no handler,
// and so no request id but one of its own. What the client sends meanwhile
// is read and dropped for up to a second (64 KiB), as a server lingers
// before it closes, so that the client's write of its request does not
// fail before it reads the answer.
func refuseConfined(c *net.UnixConn, log zerolog.Logger, pid int) {
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	detail := "a command this server runs in a sandbox with a network of its own may not use the server's socket"
	body, _ := json.Marshal(handlers.Problem{
		Type: "https://snapexec.dev/problems/" + string(handlers.SandboxedClient), Title: http.StatusText(http.StatusForbidden),
		Status: http.StatusForbidden, Code: handlers.SandboxedClient, RequestId: hex.EncodeToString(id),
		Detail: &detail,
	})
	log.Warn().Int("pid", pid).Str("requestId", hex.EncodeToString(id)).Msg("refused a sandboxed command's connection to the socket")
	_ = c.SetDeadline(time.Now().Add(time.Second))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 403 Forbidden\r\nContent-Type: application/problem+json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	_ = c.CloseWrite()
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	_ = c.Close()
}

// Close stops listening and removes the socket.
func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	if fi, statErr := os.Lstat(l.path); statErr == nil && os.SameFile(fi, l.file) {
		os.Remove(l.path)
	}
	return err
}

// listenURL is the URL a client reaches ln at: http://HOST:PORT, or
// unix:PATH for a socket (the form the CLI's --url takes).
func listenURL(ln net.Listener) string {
	if a, ok := ln.Addr().(*net.UnixAddr); ok {
		return unixPrefix + a.Name
	}
	return "http://" + ln.Addr().String()
}
