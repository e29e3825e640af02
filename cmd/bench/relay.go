package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// relayEnv, set, makes the bench binary the bare relay (serveRelay) instead
// of the bench.
const relayEnv = "SNAPEXEC_BENCH_RELAY"

// serveRelay is the least a server can do for a keystroke: a process that
// accepts WebSocket connections on loopback, starts rawCat on a terminal for
// each, and copies binary messages to the terminal and what the terminal
// shows back, one goroutine each way, its terminal read non-blocking as the
// server reads its own. It prints its address and serves until killed.
func serveRelay(stdout io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "relay listening on", ln.Addr())
	return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		cmd := exec.Command(rawCat[0], rawCat[1:]...)
		cmd.Env = []string{"PATH=" + childPath}
		master, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(terminalSize.Cols), Rows: uint16(terminalSize.Rows)})
		if err != nil {
			return
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		fd, err := unix.FcntlInt(master.Fd(), unix.F_DUPFD_CLOEXEC, 0)
		_ = master.Close()
		if err != nil || unix.SetNonblock(fd, true) != nil {
			return
		}
		term := os.NewFile(uintptr(fd), "ptmx")
		defer term.Close()
		ctx := r.Context()
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := term.Read(buf)
				if err != nil || ws.Write(ctx, websocket.MessageBinary, buf[:n]) != nil {
					return
				}
			}
		}()
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				return
			}
			if _, err := term.Write(data); err != nil {
				return
			}
		}
	}))
}

// relayProc is the bare relay running, and an attachment to it.
type relayProc struct {
	cmd *exec.Cmd
	ws  *websocket.Conn
}

// startRelay runs the bench binary as the bare relay and attaches to it.
func startRelay(ctx context.Context) (*relayProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = []string{relayEnv + "=1", "PATH=" + childPath}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &relayProc{cmd: cmd}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "relay listening on "); ok {
				addr <- a
			}
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			r.close()
			return nil, errors.New("the relay exited before listening")
		}
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if r.ws, _, err = websocket.Dial(dctx, "ws://"+a+"/", nil); err != nil {
			r.close()
			return nil, fmt.Errorf("relay: %w", err)
		}
	case <-time.After(10 * time.Second):
		r.close()
		return nil, errors.New("the relay printed no address within 10 s")
	}
	if err := readUntil(ctx, r.ws, "ready"); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *relayProc) close() {
	if r.ws != nil {
		_ = r.ws.CloseNow()
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
}
