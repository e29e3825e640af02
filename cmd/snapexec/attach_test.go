//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/snapexec/snapexec/client"
)

// terminal is the CLI running on a pseudo-terminal of the test's, as on a
// person's: what it has written so far.
type terminal struct {
	t    *testing.T
	ctx  context.Context
	ptmx *os.File
	tty  *os.File
	cmd  *exec.Cmd
	// before is the terminal's mode before snapexec started.
	before string

	mu   sync.Mutex
	out  bytes.Buffer
	more chan struct{} // a token when out has grown
}

// onTerminal starts snapexec with args as the session leader of a new
// terminal of 80x24, which is its controlling terminal: resizing it sends
// the CLI SIGWINCH.
func onTerminal(t *testing.T, ctx context.Context, args ...string) *terminal {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ptmx.Close(); tty.Close() })
	if err := pty.Setsize(ptmx, &pty.Winsize{Cols: 80, Rows: 24}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = cliEnv()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	term := &terminal{t: t, ctx: ctx, ptmx: ptmx, tty: tty, cmd: cmd, more: make(chan struct{}, 1)}
	term.before = term.mode()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			select {
			case term.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return term
}

// mode is the terminal's settings as stty -g prints them.
func (term *terminal) mode() string {
	term.t.Helper()
	cmd := exec.CommandContext(term.ctx, "stty", "-g")
	cmd.Stdin = term.tty
	out, err := cmd.Output()
	if err != nil {
		term.t.Fatalf("stty -g: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// output is what the CLI has written from byte `from` on.
func (term *terminal) output(from int) string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.String()[from:]
}

// until waits for want to appear after byte `from`, and returns where the
// output ends then.
func (term *terminal) until(from int, want string) int {
	term.t.Helper()
	for {
		term.mu.Lock()
		text, end := term.out.String(), term.out.Len()
		term.mu.Unlock()
		if strings.Contains(text[from:], want) {
			return end
		}
		select {
		case <-term.more:
		case <-term.ctx.Done():
			term.t.Fatalf("%q did not come; the terminal shows %q", want, text[from:])
		}
	}
}

// typed writes keys to the terminal, as a person types them.
func (term *terminal) typed(keys string) {
	term.t.Helper()
	if _, err := term.ptmx.Write([]byte(keys)); err != nil {
		term.t.Fatal(err)
	}
}

func TestAttachUnderAPTY(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.New(os.Getenv("SNAPEXEC_URL"), client.WithToken(os.Getenv("SNAPEXEC_TOKEN")))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PS1": "prompt$ ", "HOME": t.TempDir(), "PATH": "/usr/bin:/bin"}
	p, err := c.Start(ctx, client.StartProcessRequest{
		Argv: []string{"/bin/bash", "--norc", "--noprofile", "-i"}, Env: &env, Tty: &client.TTYSize{Cols: 40, Rows: 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.TerminateProcessWithResponse(context.Background(), p.ProcessId) })

	term := onTerminal(t, ctx, "attach", p.ProcessId)
	before := term.before
	at := term.until(0, "prompt$ ")
	if raw := term.mode(); raw == before {
		t.Errorf("attached, the terminal's mode is still %s; want it raw", raw)
	}
	term.typed("echo hi\r")
	at = term.until(at, "\r\nhi\r\n")
	// Attached, the process's terminal took this one's size.
	term.typed("stty size\r")
	at = term.until(at, "\r\n24 80\r\n")
	if err := pty.Setsize(term.ptmx, &pty.Winsize{Cols: 100, Rows: 30}); err != nil {
		t.Fatal(err)
	}
	// The resize goes its own way, beside the keys: ask until it has come.
	for from := at; !strings.Contains(term.output(from), "\r\n30 100\r\n"); {
		from = at
		term.typed("stty size\r")
		at = term.until(at, "prompt$ ")
	}
	term.typed("exit 7\r")
	err = term.cmd.Wait()
	if code := term.cmd.ProcessState.ExitCode(); code != 7 {
		t.Errorf("snapexec attach after the shell's exit 7: %v (exit %d); the terminal shows %q", err, code, term.output(0))
	}
	if after := term.mode(); after != before {
		t.Errorf("the terminal's mode after attach = %s, want it restored to %s", after, before)
	}
}

// TestAttachRestoresOnSignal: killed by signal N while attached, snapexec
// leaves the terminal as it found it and exits 128+N, and the process runs
// on.
func TestAttachRestoresOnSignal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.New(os.Getenv("SNAPEXEC_URL"), client.WithToken(os.Getenv("SNAPEXEC_TOKEN")))
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Start(ctx, client.StartProcessRequest{Argv: []string{"/bin/sh", "-c", "echo up; exec sleep 60"}, Tty: &client.TTYSize{Cols: 80, Rows: 24}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.TerminateProcessWithResponse(context.Background(), p.ProcessId) })
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP} {
		term := onTerminal(t, ctx, "attach", p.ProcessId)
		before := term.before
		term.until(0, "up\r\n")
		// Raw mode comes before the output: the output is read only then.
		if err := term.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		_ = term.cmd.Wait()
		if after := term.mode(); after != before {
			t.Errorf("after %v, the terminal's mode = %s, want it restored to %s", sig, after, before)
		}
		if code := term.cmd.ProcessState.ExitCode(); code != 128+int(sig) {
			t.Errorf("after %v, snapexec attach exits %d, want %d", sig, code, 128+int(sig))
		}
	}
	got, err := client.Result(c.GetProcessWithResponse(ctx, p.ProcessId))
	if err != nil || got.Status != client.ProcessStatusRunning {
		t.Errorf("after snapexec was killed, the process is %+v (%v), want running", got, err)
	}
}

// TestAttachJSON: without a terminal, --json prints the output and the
// ending as JSON lines, and stdin goes to the process.
func TestAttachJSON(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.New(os.Getenv("SNAPEXEC_URL"), client.WithToken(os.Getenv("SNAPEXEC_TOKEN")))
	if err != nil {
		t.Fatal(err)
	}
	pipe := true
	p, err := c.Start(ctx, client.StartProcessRequest{Argv: []string{"/bin/sh", "-c", `read -r x; printf "got $x \377"; exit 3`}, PipeStdin: &pipe})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "--json", "attach", p.ProcessId)
	cmd.Env = cliEnv()
	cmd.Stdin = strings.NewReader("typed\n")
	out, _ := cmd.Output()
	var data []byte
	var exit exitLine
	for _, ev := range decodeLines[attachEvent](t, out) {
		if ev.Type == "output" {
			data = append(data, ev.DataBase64...)
			if ev.Data != nil {
				data = append(data, *ev.Data...)
			}
		}
	}
	if lines := decodeLines[exitLine](t, out); len(lines) > 0 {
		exit = lines[len(lines)-1]
	}
	if string(data) != "got typed \xff" || exit.Status != "exited" || exit.ExitCode == nil || *exit.ExitCode != 3 || cmd.ProcessState.ExitCode() != 3 {
		t.Errorf("attach --json: %s; exit %d; want the output %q and exit 3", out, cmd.ProcessState.ExitCode(), "got typed \xff")
	}
	// The ending's line names both, signal null.
	if want := `{"type":"exit","status":"exited","exitCode":3,"signal":null}` + "\n"; !bytes.HasSuffix(out, []byte(want)) {
		t.Errorf("attach --json: %s; want the last line %s", out, want)
	}
}

// TestRunTTY: run --tty starts the command on a terminal of this one's size
// and attaches to it.
func TestRunTTY(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	term := onTerminal(t, ctx, "run", "--tty", "--", "/bin/sh", "-c", `stty size; read -r x; echo "got $x"; exit 2`)
	at := term.until(0, "24 80\r\n")
	term.typed("yes\r")
	term.until(at, "got yes\r\n")
	if err := term.cmd.Wait(); term.cmd.ProcessState.ExitCode() != 2 {
		t.Errorf("run --tty: %v (exit %d), want exit 2; the terminal shows %q", err, term.cmd.ProcessState.ExitCode(), term.output(0))
	}
}

// TestTerminal: terminal opens a shell from a snapshot scope on a terminal
// of this one's size and attaches to it; the shell's exit is snapexec's.
func TestTerminal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	term := onTerminal(t, ctx, "terminal", "--scope", "cli-terminal", "--shell", "/bin/bash")
	// Typed ahead, as a person may: the terminal holds the keys until
	// snapexec reads them.
	term.typed("echo up; stty size\r")
	term.until(0, "\r\nup\r\n24 80\r\n")
	term.typed("exit 5\r")
	if err := term.cmd.Wait(); term.cmd.ProcessState.ExitCode() != 5 {
		t.Errorf("terminal: %v (exit %d), want exit 5; the terminal shows %q", err, term.cmd.ProcessState.ExitCode(), term.output(0))
	}
}

// TestAttachPipeOnATerminal: a process that reads a pipe gets this
// terminal's lines, edited and echoed here: no raw mode.
func TestAttachPipeOnATerminal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.New(os.Getenv("SNAPEXEC_URL"), client.WithToken(os.Getenv("SNAPEXEC_TOKEN")))
	if err != nil {
		t.Fatal(err)
	}
	pipe := true
	p, err := c.Start(ctx, client.StartProcessRequest{Argv: []string{"/bin/sh", "-c", `echo ready; read -r x; echo "got $x"`}, PipeStdin: &pipe})
	if err != nil {
		t.Fatal(err)
	}
	term := onTerminal(t, ctx, "attach", p.ProcessId)
	before := term.before
	term.until(0, "ready\r\n") // the terminal, cooked, ends the line
	if mode := term.mode(); mode != before {
		t.Errorf("attached to a pipe, the terminal's mode = %s, want it as it was, %s", mode, before)
	}
	term.typed("abd\x7fc\r") // a typo, erased here: the line discipline's
	term.until(0, "got abc\r\n")
	if err := term.cmd.Wait(); term.cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("attach: %v (exit %d); the terminal shows %q", err, term.cmd.ProcessState.ExitCode(), term.output(0))
	}
}
