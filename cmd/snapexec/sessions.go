package main

import (
	"context"
	"fmt"
	"path"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/snapexec/snapexec/client"
)

func (a *app) sessionsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List shell sessions; with a subcommand, create, use, fork or end one",
		Long: `A session carries shell state (cwd, variables, functions, aliases, options, umask,
traps) from one command to the next, as one persistent shell would, without one.`,
		Example: `  snapexec sessions new agent-7 --cwd /src --env HOME --env PATH --snapshot ws-1
  snapexec sessions exec agent-7 'cd sub && export FOO=bar'
  snapexec sessions exec agent-7 'pwd; echo $FOO'
  snapexec sessions fork agent-7 agent-7-try
  snapexec sessions rm agent-7`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			list, err := client.Result(c.ListSessionsWithResponse(cmd.Context()))
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(list)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SESSION\tSHELL\tCWD\tCOMMANDS\tBUSY\tLAST USED")
			for _, s := range list.Sessions {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%t\t%s\n", s.SessionId, s.Shell.Path, s.Cwd, s.Commands, s.Busy,
					s.LastUsedAt.Local().Format(time.DateTime))
			}
			return tw.Flush()
		},
	}
	cmd.AddCommand(a.sessionNewCommand(), a.sessionExecCommand(), a.sessionShowCommand(), a.sessionForkCommand(), a.sessionRemoveCommand())
	return cmd
}

func (a *app) sessionNewCommand() *cobra.Command {
	var shellPath, shell, cwd, snapshot string
	var env []string
	cmd := &cobra.Command{
		Use:               "new [ID]",
		Short:             "Create a session (its id printed), from a scope's snapshot with --snapshot",
		Args:              usageArgs(cobra.MaximumNArgs(1)),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if shell == "" {
				shell = path.Base(shellPath)
			}
			req := client.SessionCreateRequest{Shell: client.ShellInfo{Name: shell, Path: shellPath}}
			if len(args) == 1 {
				req.SessionId = &args[0]
			}
			if cwd != "" {
				req.Cwd = &cwd
			}
			if len(env) > 0 {
				vars, err := environment(env, a.getenv)
				if err != nil {
					return err
				}
				req.Env = &vars
			}
			if snapshot != "" {
				req.ShellSnapshot = &client.SessionSnapshotRequest{ScopeId: snapshot}
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			s, err := c.NewSession(cmd.Context(), req)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(s)
			}
			fmt.Fprintln(a.stdout, s.SessionId)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&shellPath, "shell-path", "/bin/bash", "the session's shell: bash or zsh")
	f.StringVar(&shell, "shell", "", "the shell's name: bash or zsh (default the base name of --shell-path)")
	f.StringVar(&cwd, "cwd", "", "the first command's working directory, absolute (default the server's)")
	f.StringArrayVar(&env, "env", nil, "K=V, or K for this shell's value: the session's environment (repeatable)")
	f.StringVar(&snapshot, "snapshot", "", "start from SCOPE's shell snapshot instead of a bare shell's state")
	return cmd
}

func (a *app) sessionExecCommand() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "exec ID SCRIPT...",
		Short: "Run a script in a session's state, its output and exit status as snapexec's own",
		Long: `Run SCRIPT (the words after ID, joined by spaces) in the session's state and wait for it.
Its stdout and stderr are written here, and snapexec exits with its exit status, or
128+N when signal N ended it. The state it leaves is the session's next; with --json,
the answer comes whole, with the names of what the script changed.`,
		Args:              usageArgs(cobra.MinimumNArgs(2)),
		ValidArgsFunction: a.completeSessions,
		RunE: func(cmd *cobra.Command, args []string) error {
			req := client.SessionExecRequest{Script: strings.Join(args[1:], " ")}
			if timeout > 0 {
				ms := max(timeout.Milliseconds(), 1)
				req.TimeoutMs = &ms
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			r, err := c.SessionExec(cmd.Context(), args[0], req)
			if err != nil {
				return runFailure{err}
			}
			if a.json {
				if err := a.printJSON(r); err != nil {
					return err
				}
			} else {
				if _, err := a.stdout.Write(r.StdoutData()); err != nil {
					return err
				}
				if _, err := a.stderr.Write(r.StderrData()); err != nil {
					return err
				}
				if !r.Session.StateKept {
					reason := "the command did not end on its own"
					if r.Session.Reason != nil {
						reason = *r.Session.Reason
					}
					fmt.Fprintf(a.stderr, "snapexec: the session keeps its state from before this command: %s\n", reason)
				}
			}
			return endingStatus(&client.ExecResult{ExitCode: r.ExitCode, Signal: r.Signal, Status: r.Status})
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "wall-clock limit; a command that runs out of it leaves the session's state as it was")
	return cmd
}

func (a *app) sessionShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "show ID",
		Short:             "Show a session: its cwd, the names it defines, its last commands",
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeSessions,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			s, err := client.Result(c.GetSessionWithResponse(cmd.Context(), args[0]))
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(s)
			}
			fmt.Fprintf(a.stdout, "session    %s (%s)\ncwd        %s\nvariables  %s\nfunctions  %s\naliases    %s\n",
				s.SessionId, s.Shell.Path, s.Cwd, strings.Join(s.Variables, " "), strings.Join(s.Functions, " "), strings.Join(s.Aliases, " "))
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "STARTED\tSTATUS\tCODE\tSTATE KEPT\tSCRIPT")
			for _, h := range s.History {
				code := "-"
				if h.ExitCode != nil {
					code = fmt.Sprint(*h.ExitCode)
				} else if h.Signal != nil {
					code = *h.Signal
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\n", h.StartedAt.Local().Format(time.TimeOnly), h.Status, code, h.StateKept, oneLine(h.Script))
			}
			return tw.Flush()
		},
	}
}

func (a *app) sessionForkCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "fork ID [NEW-ID]",
		Short:             "Create a session starting from another's current state (its id printed)",
		Args:              usageArgs(cobra.RangeArgs(1, 2)),
		ValidArgsFunction: a.completeSessions,
		RunE: func(cmd *cobra.Command, args []string) error {
			var req client.SessionForkRequest
			if len(args) == 2 {
				req.SessionId = &args[1]
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			s, err := c.ForkSession(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(s)
			}
			fmt.Fprintln(a.stdout, s.SessionId)
			return nil
		},
	}
}

func (a *app) sessionRemoveCommand() *cobra.Command {
	return a.idCommand("rm ID", "End a session", a.completeSessions,
		func(ctx context.Context, c *client.Client, id string) error {
			return client.Check(c.DeleteSessionWithResponse(ctx, id))
		})
}

// completeSessions offers the server's session ids as the first argument.
func (a *app) completeSessions(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return a.completeFirst(cmd, args, func(c *client.Client) ([]string, error) {
		list, err := client.Result(c.ListSessionsWithResponse(cmd.Context()))
		if err != nil {
			return nil, err
		}
		ids := make([]string, len(list.Sessions))
		for i, s := range list.Sessions {
			ids[i] = s.SessionId
		}
		return ids, nil
	})
}

// oneLine is a script shown on one line of a table.
func oneLine(script string) string {
	return strings.ReplaceAll(script, "\n", "; ")
}
