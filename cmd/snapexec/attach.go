package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/snapexec/snapexec/client"
)

// defaultTTY is the size of a terminal started from something that is no
// terminal.
var defaultTTY = client.TTYSize{Cols: 80, Rows: 24}

func (a *app) attachCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "attach ID",
		Short: "Attach this terminal to a process's terminal (or its output and stdin)",
		Long: `Attach to a process: its output from what the server still holds on, then live;
what is typed here goes to its stdin. When stdin is a terminal and so is the
process's, this one is put in raw mode (restored at the end, and on SIGINT, SIGTERM and SIGHUP), so every key,
Ctrl-C included, goes to the process, and the process's terminal follows this
one's size. A dropped connection is resumed without losing or repeating output.
snapexec exits with the process's status as exec does; the process runs on when
snapexec is killed. With --json, print the output as JSON lines ({"type":"output",
"seq":N,"data":...}), then the ending ({"type":"exit","status":...,"exitCode":...,
"signal":...}, exitCode or signal null), and leave stdin as it is.`,
		Example: `  id=$(snapexec run --bg --tty -- /bin/bash -l)
  snapexec attach "$id"`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeProcesses,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			return a.attach(cmd.Context(), c, args[0])
		},
	}
}

func (a *app) terminalCommand() *cobra.Command {
	var scope, shell, cwd string
	cmd := &cobra.Command{
		Use:   "terminal [--scope SCOPE] [--shell PATH] [--cwd DIR]",
		Short: "Open a login shell on a new terminal on the server, and attach to it",
		Long: `Start SHELL -l on a terminal of this one's size and attach to it, as attach does.
With --scope, the shell opens with the scope's login terminal snapshot (the
functions, aliases, options, variables and key bindings its interactive startup
files set) instead of sourcing them. The shell is
ended when snapexec is interrupted or loses the server for good.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			size := a.terminalSize()
			req := client.StartProcessRequest{Argv: []string{shell, "-l"}, Tty: &size}
			if cwd != "" {
				req.Cwd = &cwd
			}
			if scope != "" {
				req.ShellSnapshot = &client.ShellSnapshotRequest{ScopeId: scope, Shell: client.ShellInfo{Name: path.Base(shell), Path: shell}}
			}
			p, err := c.Start(cmd.Context(), req)
			if err != nil {
				return runFailure{err}
			}
			err = a.attach(cmd.Context(), c, p.ProcessId)
			var code exitCode
			if err != nil && !errors.As(err, &code) {
				// Detached by a signal or a lost server: the shell was this
				// command's own, so it goes too (as ssh's does).
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, _ = c.TerminateProcessWithResponse(ctx, p.ProcessId)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&scope, "scope", "", "open with this snapshot scope's shell state")
	cmd.Flags().StringVar(&shell, "shell", "/bin/bash", "the login shell: bash, zsh or sh")
	cmd.Flags().StringVar(&cwd, "cwd", "", "the shell's working directory on the server, absolute (default the server's)")
	return cmd
}

// stdinTerminal is stdin's descriptor when stdin is a terminal.
func (a *app) stdinTerminal() (int, bool) {
	f, ok := a.stdin.(*os.File)
	if !ok {
		return 0, false
	}
	fd := int(f.Fd())
	return fd, term.IsTerminal(fd)
}

// terminalSize is the size of the terminal on stdin, or defaultTTY.
func (a *app) terminalSize() client.TTYSize {
	if fd, ok := a.stdinTerminal(); ok {
		if cols, rows, err := term.GetSize(fd); err == nil && cols > 0 && rows > 0 {
			return client.TTYSize{Cols: cols, Rows: rows}
		}
	}
	return defaultTTY
}

// attach connects this terminal to the process id until it ends.
func (a *app) attach(ctx context.Context, c *client.Client, id string) (err error) {
	// SIGINT and SIGTERM end ctx already (run); a terminal that closes
	// sends SIGHUP. Each must leave the terminal as it was, and be the
	// cause of the error.
	ctx, stop := onSignals(ctx, syscall.SIGHUP)
	defer stop()
	defer func() { err = interruption(ctx, err) }()
	p, err := client.Result(c.GetProcessWithResponse(ctx, id))
	if err != nil {
		return err
	}
	at, err := c.Attach(ctx, id, client.AttachOptions{})
	if err != nil {
		return err
	}
	defer at.Close()
	// Raw mode is for a process on a terminal, whose own terminal echoes
	// and edits lines; one reading a pipe gets this terminal's lines.
	if fd, ok := a.stdinTerminal(); ok && p.Tty != nil && !a.json {
		state, err := term.MakeRaw(fd)
		if err != nil {
			return err
		}
		defer func() { _ = term.Restore(fd, state) }()
		a.followSize(ctx, at, fd)
	}
	go a.forwardStdin(ctx, at)
	if a.json {
		err = a.printAttached(at)
	} else {
		_, err = io.Copy(a.stdout, at)
	}
	if err != nil {
		return runFailure{err}
	}
	return endingStatus(at.Result())
}

// followSize gives the process's terminal this one's size, now and at
// every SIGWINCH, until ctx ends.
func (a *app) followSize(ctx context.Context, at *client.Attachment, fd int) {
	winch := make(chan os.Signal, 1)
	if sigs := resizeSignals(); len(sigs) > 0 {
		signal.Notify(winch, sigs...) // none would be every signal
	}
	winch <- nil // the size now
	go func() {
		defer signal.Stop(winch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-winch:
				if cols, rows, err := term.GetSize(fd); err == nil && cols > 0 && rows > 0 {
					_ = at.Resize(cols, rows) // an ended attachment says so on its reads
				}
			}
		}
	}()
}

// forwardStdin sends what is read on stdin to the process. The end of
// stdin is not passed on: a terminal has none (Ctrl-D is a byte like the
// others), and a process without a terminal reads on.
func (a *app) forwardStdin(ctx context.Context, at *client.Attachment) {
	buf := make([]byte, 32<<10)
	for {
		n, err := a.stdin.Read(buf)
		if n > 0 {
			if _, werr := at.Write(buf[:n]); werr != nil {
				if errors.Is(werr, io.ErrClosedPipe) || ctx.Err() != nil {
					return
				}
				fmt.Fprintf(a.stderr, "\r\nsnapexec: %d bytes of input lost: %v\r\n", n, werr)
			}
		}
		if err != nil {
			return
		}
	}
}

// attachEvent is a line of attach --json but the last (an exitLine).
type attachEvent struct {
	Type       string  `json:"type"`
	Seq        int64   `json:"seq,omitempty"`
	Data       *string `json:"data,omitempty"`
	DataBase64 []byte  `json:"dataBase64,omitempty"`
	// Chunks counts the chunks a lost event stands for.
	Chunks int64 `json:"chunks,omitempty"`
}

// printAttached prints the attachment's output and ending as JSON lines:
// the output as text when it is UTF-8, else as base64 (dataBase64), as the
// server's chunks do; then the exitLine.
func (a *app) printAttached(at *client.Attachment) error {
	var lost int64
	for {
		out, err := at.Next()
		if n := at.Lost(); n > lost {
			if err := a.printJSON(attachEvent{Type: "lost", Chunks: n - lost}); err != nil {
				return err
			}
			lost = n
		}
		if err == io.EOF {
			return a.printJSON(exitLineOf(at.Result()))
		}
		if err != nil {
			return err
		}
		ev := attachEvent{Type: "output", Seq: out.Seq}
		if utf8.Valid(out.Data) {
			text := string(out.Data)
			ev.Data = &text
		} else {
			ev.DataBase64 = out.Data
		}
		if err := a.printJSON(ev); err != nil {
			return err
		}
	}
}
