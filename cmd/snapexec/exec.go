package main

import (
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/snapexec/snapexec/client"
)

// commandFlags are what exec and run share: the command's directory,
// environment, limit and snapshot.
type commandFlags struct {
	cwd      string
	env      []string
	timeout  time.Duration
	snapshot string
	shell    string
}

func (f *commandFlags) register(fs *pflag.FlagSet) {
	// The command's flags end at its program name: `exec ls -la` runs ls -la.
	fs.SetInterspersed(false)
	fs.StringVar(&f.cwd, "cwd", "", "the command's working directory on the server, absolute (default the server's)")
	fs.StringArrayVar(&f.env, "env", nil, "K=V sets a variable of the command's environment, which is only these; K alone passes this shell's value of K (repeatable)")
	fs.DurationVar(&f.timeout, "timeout", 0, "wall-clock limit; then SIGTERM and SIGKILL to the command's process group")
	fs.StringVar(&f.snapshot, "snapshot", "", "replay SCOPE's shell snapshot into a `SHELL -lc SCRIPT` command")
	fs.StringVar(&f.shell, "shell", "", "the --snapshot shell's name: bash, zsh or sh (default argv[0]'s base name)")
}

// request is the command argv with the flags, as /exec takes it.
func (f *commandFlags) request(argv []string, getenv func(string) string) (client.ExecRequest, error) {
	req := client.ExecRequest{Argv: argv}
	if f.cwd != "" {
		req.Cwd = &f.cwd
	}
	if len(f.env) > 0 {
		env, err := environment(f.env, getenv)
		if err != nil {
			return req, err
		}
		req.Env = &env
	}
	if f.timeout > 0 {
		ms := max(f.timeout.Milliseconds(), 1)
		req.TimeoutMs = &ms
	}
	switch {
	case f.snapshot != "":
		shell := f.shell
		if shell == "" {
			shell = path.Base(argv[0])
		}
		req.ShellSnapshot = &client.ShellSnapshotRequest{ScopeId: f.snapshot, Shell: client.ShellInfo{Name: shell, Path: argv[0]}}
	case f.shell != "":
		return req, usageError{errors.New("--shell names the shell of --snapshot, which is not given")}
	}
	return req, nil
}

// environment reads --env values: K=V, or K for this shell's own value.
func environment(vars []string, getenv func(string) string) (map[string]string, error) {
	env := make(map[string]string, len(vars))
	for _, kv := range vars {
		name, value, set := strings.Cut(kv, "=")
		if name == "" {
			return nil, usageError{fmt.Errorf("--env %q has no name", kv)}
		}
		if !set {
			if value = getenv(name); value == "" {
				return nil, usageError{fmt.Errorf("--env %s: %s is not set here", name, name)}
			}
		}
		env[name] = value
	}
	return env, nil
}

func (a *app) execCommand() *cobra.Command {
	var flags commandFlags
	cmd := &cobra.Command{
		Use:   "exec [flags] [--] PROGRAM [ARG...]",
		Short: "Run a command to completion, its output and exit status as snapexec's own",
		Long: `Run a command on the server and wait for it. Its stdout and stderr are written here
byte for byte as they come, and snapexec exits with its exit status, or 128+N when
signal N ended it; 255 when it could not be run or its ending is unknown. The
server ends the command if snapexec is interrupted or its connection is lost for
good. With --json, the answer comes whole at the end, as /exec's JSON.`,
		Example: `  snapexec exec -- make test
  snapexec exec --cwd /src --env PATH --timeout 5m -- go vet ./...
  snapexec exec --snapshot ws-1 -- /bin/bash -lc 'nvm use; npm test'`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			req, err := flags.request(argv, a.getenv)
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			if a.json {
				res, err := c.Exec(cmd.Context(), req)
				if err != nil {
					return runFailure{err}
				}
				if err := a.printJSON(res); err != nil {
					return err
				}
				return endingStatus(res)
			}
			s, err := c.ExecStream(cmd.Context(), req)
			if err != nil {
				return runFailure{err}
			}
			return a.follow(s)
		},
	}
	flags.register(cmd.Flags())
	return cmd
}

func (a *app) runCommand() *cobra.Command {
	var flags commandFlags
	var bg, tty bool
	var id string
	cmd := &cobra.Command{
		Use:   "run [flags] [--] PROGRAM [ARG...]",
		Short: "Start a background process; with --bg print its id, else follow it",
		Long: `Start a background process on the server: it runs on whatever happens to this
snapexec. With --bg, print its id (with --json, the process) and return at once.
Without, follow its output as logs -f does, and exit with its status as exec
does; an interrupt detaches, and the process runs on. With --tty, it runs on a
terminal, and without --bg snapexec attaches to it as attach does.`,
		Example: `  id=$(snapexec run --bg -- ./build.sh)
  snapexec logs -f "$id"`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			req, err := flags.request(argv, a.getenv)
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			start := client.StartProcessRequest{
				Argv: req.Argv, Cwd: req.Cwd, Env: req.Env, ShellSnapshot: req.ShellSnapshot, TimeoutMs: req.TimeoutMs,
			}
			if tty {
				size := a.terminalSize()
				start.Tty = &size
			}
			if id != "" {
				start.ProcessId = &id
			}
			p, err := c.Start(cmd.Context(), start)
			if err != nil {
				return runFailure{err}
			}
			if bg {
				if a.json {
					return a.printJSON(p)
				}
				_, err := fmt.Fprintln(a.stdout, p.ProcessId)
				return err
			}
			if tty {
				return a.attach(cmd.Context(), c, p.ProcessId)
			}
			s, err := c.Events(cmd.Context(), p.ProcessId, 0)
			if err != nil {
				return runFailure{err}
			}
			err = a.follow(s)
			if cmd.Context().Err() != nil {
				fmt.Fprintf(a.stderr, "snapexec: detached; %s runs on (snapexec kill %s ends it)\n", p.ProcessId, p.ProcessId)
			}
			return err
		},
	}
	flags.register(cmd.Flags())
	cmd.Flags().BoolVar(&bg, "bg", false, "print the process's id and return at once")
	cmd.Flags().BoolVarP(&tty, "tty", "t", false, "run it on a terminal of this one's size; without --bg, attach to it as attach does")
	cmd.Flags().StringVar(&id, "id", "", "the process's id (default one the server makes)")
	return cmd
}

// follow writes a stream's output as it comes (with --json, one chunk per
// line, then the exitLine) and returns the process's ending as an exit
// status. Output the server dropped before it was read is said on stderr
// where it was, since it cannot be shown (with --json, the chunks' seqs
// show the gap).
func (a *app) follow(s *client.Stream) error {
	defer s.Close()
	var lost int64
	for {
		chunk, err := s.Next()
		if n := s.Lost(); n > lost && !a.json {
			fmt.Fprintf(a.stderr, "snapexec: %d chunks of output lost here: the server dropped them before they were read\n", n-lost)
			lost = n
		}
		if err == io.EOF {
			if a.json {
				if err := a.printJSON(exitLineOf(s.Result())); err != nil {
					return err
				}
			}
			return endingStatus(s.Result())
		}
		if err != nil {
			return runFailure{err}
		}
		if err := a.writeChunk(chunk); err != nil {
			return err
		}
	}
}

// writeChunk writes the chunk's bytes to the stream it came from, or with
// --json the chunk as one line.
func (a *app) writeChunk(c client.OutputChunk) error {
	if a.json {
		return a.printJSON(c)
	}
	out := a.stdout
	if c.Stream == client.OutputChunkStreamStderr {
		out = a.stderr
	}
	_, err := out.Write(c.Bytes())
	return err
}

// exitLine is the last line of the --json output that follows a process
// to its end (attach, logs -f, run): how it ended, with exitCode and signal
// always there, null when absent, as the server's exit event has them.
type exitLine struct {
	Type     string  `json:"type"` // "exit"
	Status   string  `json:"status"`
	ExitCode *int    `json:"exitCode"`
	Signal   *string `json:"signal"`
}

func exitLineOf(r *client.ExecResult) exitLine {
	return exitLine{Type: "exit", Status: string(r.Status), ExitCode: r.ExitCode, Signal: r.Signal}
}

// endingStatus is the exit status a shell gives a command that ended so:
// its exit code, or 128+N for signal N.
func endingStatus(r *client.ExecResult) error {
	switch {
	case r.ExitCode != nil:
		if *r.ExitCode == 0 {
			return nil
		}
		return exitCode(*r.ExitCode)
	case r.Signal != nil:
		if n, ok := signalNumbers[*r.Signal]; ok {
			return exitCode(128 + n)
		}
	}
	return runFailure{fmt.Errorf("the command's ending is unknown (status %s)", r.Status)}
}
