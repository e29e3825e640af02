package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
func listenAll(addrs []string) ([]net.Listener, error) {
	lns := make([]net.Listener, 0, len(addrs))
	for _, addr := range addrs {
		ln, err := listen(addr)
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
// Closing the listener removes the socket.
func listen(addr string) (net.Listener, error) {
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
	return &unixListener{UnixListener: ln, path: path, file: fi}, nil
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
}

// Addr is the socket's path.
func (l *unixListener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

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
