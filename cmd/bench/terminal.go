package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/creack/pty"

	"github.com/snapexec/snapexec/client"
)

// rawCat echoes every byte it reads at once: the terminal in raw mode, no
// echo of its own, so that one byte in is one byte out.
var rawCat = []string{"/bin/sh", "-c", "stty raw -echo && echo ready && exec cat"}

// terminalSize is the size of every terminal the bench opens.
var terminalSize = client.TTYSize{Cols: 120, Rows: 40}

// terminals times a keystroke's round trip through the attach WebSocket, over
// TCP and over the Unix socket, against one through a terminal the bench
// opens itself (the floor) and one through a bare WebSocket relay to a
// terminal, a process of its own with nothing but the relay in it (the
// floor of any server); and the first prompt of a login terminal started from
// a snapshot against a real login terminal, both through the server.
func (b *bench) terminals(ctx context.Context, keystrokes, prompts int) ([]summary, error) {
	ws, err := attachCat(ctx, b.srv.endpoint, "bench-cat", b.home)
	if err != nil {
		return nil, err
	}
	defer ws.CloseNow()
	wsUnix, err := attachCat(ctx, b.unix, "bench-cat-unix", b.home)
	if err != nil {
		return nil, err
	}
	defer wsUnix.CloseNow()
	own, err := openCat(ctx)
	if err != nil {
		return nil, err
	}
	defer own.close()
	relay, err := startRelay(ctx)
	if err != nil {
		return nil, err
	}
	defer relay.close()
	keys, err := interleave(ctx, []mode{
		{key: "keyws", label: "keystroke round trip, attach WebSocket", run: func(ctx context.Context) (sample, error) { return wsRoundTrip(ctx, ws) }},
		{key: "keywsunix", label: "keystroke round trip, attach WebSocket, Unix socket", run: func(ctx context.Context) (sample, error) { return wsRoundTrip(ctx, wsUnix) }},
		{key: "keyrelay", label: "keystroke round trip, bare WebSocket relay", direct: true, run: func(ctx context.Context) (sample, error) { return wsRoundTrip(ctx, relay.ws) }},
		{key: "keypty", label: "keystroke round trip, own pty (floor)", direct: true, run: own.roundTrip},
	}, keystrokes, warmupRounds)
	if err != nil {
		return nil, err
	}
	// The prewarm captures the scope's login terminals' own snapshot
	// (docs/design/snapshots.md#login-terminals), which every prompt from a
	// snapshot then opens from.
	const scope = "bench-terminal"
	if _, _, err := b.prewarm(ctx, scope, b.home, true); err != nil {
		return nil, err
	}
	n := 0
	prompt := func(scope string) func(context.Context) (sample, error) {
		return func(ctx context.Context) (sample, error) {
			n++
			return b.firstPrompt(ctx, "bench-term-"+strconv.Itoa(n), scope)
		}
	}
	firsts, err := interleave(ctx, []mode{
		{key: "promptsnap", label: "login terminal from a snapshot, first prompt", run: prompt(scope)},
		{key: "promptlogin", label: "real login terminal, first prompt", run: prompt("")},
	}, prompts, 1)
	if err != nil {
		return nil, err
	}
	out := append(keys, firsts...)
	for i := range out {
		// Not /exec answers: there is no server duration or snapshot wait.
		out[i].ServerMedianMs, out[i].WaitMedianMs = nil, nil
	}
	return out, nil
}

// attachCat starts rawCat on a terminal as process id through srv and
// attaches to it.
func attachCat(ctx context.Context, srv *endpoint, id, home string) (*websocket.Conn, error) {
	size, env := terminalSize, envFor(home)
	if _, err := srv.api.Start(ctx, client.StartProcessRequest{ProcessId: &id, Argv: rawCat, Tty: &size, Env: &env}); err != nil {
		return nil, fmt.Errorf("POST /processes %s: %w", rawCat, err)
	}
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.base, "http")+"/processes/"+id+"/attach", &websocket.DialOptions{HTTPClient: srv.http})
	if err != nil {
		return nil, fmt.Errorf("attach: %w", err)
	}
	if err := readUntil(ctx, ws, "ready"); err != nil {
		ws.CloseNow()
		return nil, err
	}
	return ws, nil
}

// wsRoundTrip sends one byte and waits for it to come back.
func wsRoundTrip(ctx context.Context, ws *websocket.Conn) (sample, error) {
	start := time.Now()
	if err := ws.Write(ctx, websocket.MessageBinary, []byte{'x'}); err != nil {
		return sample{}, err
	}
	if err := readUntil(ctx, ws, "x"); err != nil {
		return sample{}, err
	}
	return sample{wallMs: ms(time.Since(start))}, nil
}

// readUntil reads output messages until one ends with want.
func readUntil(ctx context.Context, ws *websocket.Conn, want string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var seen []byte
	for !bytes.HasSuffix(bytes.TrimRight(seen, "\r\n"), []byte(want)) {
		typ, data, err := ws.Read(ctx)
		if err != nil {
			return fmt.Errorf("waiting for %q after %q: %w", want, seen, err)
		}
		if typ == websocket.MessageBinary {
			seen = append(seen, data...)
		}
	}
	return nil
}

// ownCat is rawCat on a terminal the bench opens itself.
type ownCat struct {
	cmd *exec.Cmd
	f   *os.File
}

func openCat(ctx context.Context) (*ownCat, error) {
	cmd := exec.CommandContext(ctx, rawCat[0], rawCat[1:]...)
	cmd.Env = []string{"PATH=" + childPath}
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(terminalSize.Cols), Rows: uint16(terminalSize.Rows)})
	if err != nil {
		return nil, err
	}
	c := &ownCat{cmd: cmd, f: f}
	var seen []byte
	buf := make([]byte, 256)
	for !bytes.Contains(seen, []byte("ready")) {
		n, err := f.Read(buf)
		if err != nil {
			c.close()
			return nil, fmt.Errorf("own pty: %w after %q", err, seen)
		}
		seen = append(seen, buf[:n]...)
	}
	return c, nil
}

func (c *ownCat) roundTrip(context.Context) (sample, error) {
	start := time.Now()
	if _, err := c.f.Write([]byte{'x'}); err != nil {
		return sample{}, err
	}
	buf := make([]byte, 1)
	if _, err := c.f.Read(buf); err != nil || buf[0] != 'x' {
		return sample{}, fmt.Errorf("own pty read %q: %v", buf, err)
	}
	return sample{wallMs: ms(time.Since(start))}, nil
}

func (c *ownCat) close() {
	_ = c.cmd.Process.Kill()
	_ = c.f.Close()
	_ = c.cmd.Wait()
}

// firstPrompt starts `bash -l` on a terminal through the server (from the
// scope's snapshot unless scope is empty), attaches, and times the request
// until the prompt shows; then it ends the terminal, untimed.
func (b *bench) firstPrompt(ctx context.Context, id, scope string) (sample, error) {
	size, env, home := terminalSize, envFor(b.home), b.home
	req := client.StartProcessRequest{ProcessId: &id, Argv: []string{"/bin/bash", "-l"}, Tty: &size, Cwd: &home, Env: &env}
	if scope != "" {
		req.ShellSnapshot = &client.ShellSnapshotRequest{ScopeId: scope, Shell: bashShell}
	}
	start := time.Now()
	p, err := b.srv.api.Start(ctx, req)
	if err != nil {
		return sample{}, fmt.Errorf("POST /processes %s: %w", req.Argv, err)
	}
	defer b.srv.api.TerminateProcessWithResponse(context.WithoutCancel(ctx), id) //nolint:errcheck // the process ends either way
	if (scope != "") != (p.Snapshot.Outcome == client.SnapshotReceiptOutcomeUsed) {
		return sample{}, fmt.Errorf("POST /processes %s: snapshot %s, want it used exactly when asked for", req.Argv, p.Snapshot.Outcome)
	}
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.srv.base, "http")+"/processes/"+id+"/attach", nil)
	if err != nil {
		return sample{}, fmt.Errorf("attach: %w", err)
	}
	defer ws.CloseNow()
	if err := readPrompt(ctx, ws); err != nil {
		return sample{}, err
	}
	return sample{wallMs: ms(time.Since(start))}, nil
}

// readPrompt reads until the output ends with a prompt: "$ " or "# ".
func readPrompt(ctx context.Context, ws *websocket.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var seen []byte
	for !bytes.HasSuffix(seen, []byte("$ ")) && !bytes.HasSuffix(seen, []byte("# ")) {
		typ, data, err := ws.Read(ctx)
		if err != nil {
			return errors.Join(fmt.Errorf("no prompt in %q", seen), err)
		}
		if typ == websocket.MessageBinary {
			seen = append(seen, data...)
		}
	}
	return nil
}
