package main

import (
	"context"
	"fmt"
	"path"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/snapexec/snapexec/client"
)

func (a *app) snapshotsCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "snapshots [SCOPE]",
		Short:             "List the shell-snapshot cache, or one scope's entries",
		Args:              usageArgs(cobra.MaximumNArgs(1)),
		ValidArgsFunction: a.completeScopes,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			var entries []client.SnapshotEntry
			if len(args) == 0 {
				list, err := client.Result(c.ListSnapshotsWithResponse(cmd.Context()))
				if err != nil {
					return err
				}
				if a.json {
					return a.printJSON(list)
				}
				entries = list.Entries
			} else {
				scope, err := client.Result(c.GetSnapshotsWithResponse(cmd.Context(), args[0]))
				if err != nil {
					return err
				}
				if a.json {
					return a.printJSON(scope)
				}
				entries = scope.Entries
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SCOPE\tSHELL\tCWD\tSTATE\tHITS\tCAPTURE\tFUNCTIONS\tALIASES\tVARIABLES")
			for _, e := range entries {
				capture := "-"
				if e.CaptureMs != nil {
					capture = fmt.Sprintf("%.0fms", *e.CaptureMs)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%d\t%d\t%d\n", e.ScopeId, e.Shell.Path, e.Cwd, e.State, e.Hits,
					capture, e.FunctionCount, e.AliasCount, e.EnvCount)
			}
			return tw.Flush()
		},
	}
}

func (a *app) prewarmCommand() *cobra.Command {
	var shell, shellPath, cwd string
	var env []string
	var terminal bool
	cmd := &cobra.Command{
		Use:   "prewarm SCOPE",
		Short: "Capture a scope's shell snapshot now, ahead of the commands that use it",
		Long: `Capture SCOPE's login-shell snapshot and wait for it. A later command uses it when it
runs the same shell (by path, as its argv[0]), in the same directory, with the same
environment: give prewarm what those commands will give exec. With --terminal it captures
instead the snapshot the scope's login terminals open from (snapexec terminal), by an
interactive login shell.`,
		Example:           `  snapexec prewarm ws-1 --shell-path /bin/bash --cwd /src --env HOME --env PATH`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if shell == "" {
				shell = path.Base(shellPath)
			}
			req := client.PrewarmRequest{Shell: client.ShellInfo{Name: shell, Path: shellPath}}
			if terminal {
				req.Terminal = &terminal
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
			c, err := a.client()
			if err != nil {
				return err
			}
			entry, err := client.Result(c.PrewarmSnapshotWithResponse(cmd.Context(), args[0], nil, req))
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(entry)
			}
			fmt.Fprintf(a.stdout, "%s: %s", entry.ScopeId, entry.State)
			if entry.CaptureMs != nil {
				fmt.Fprintf(a.stdout, " in %.0fms (%d variables, %d functions, %d aliases)",
					*entry.CaptureMs, entry.EnvCount, entry.FunctionCount, entry.AliasCount)
			}
			fmt.Fprintln(a.stdout)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&shellPath, "shell-path", "/bin/bash", "the shell as the commands' argv[0] gives it")
	f.StringVar(&shell, "shell", "", "the shell's name: bash, zsh or sh (default the base name of --shell-path)")
	f.StringVar(&cwd, "cwd", "", "the commands' working directory, absolute (default the server's)")
	f.StringArrayVar(&env, "env", nil, "K=V, or K for this shell's value: the commands' environment (repeatable)")
	f.BoolVar(&terminal, "terminal", false, "capture the login terminals' snapshot (bash and zsh), not the commands'")
	return cmd
}

func (a *app) forgetCommand() *cobra.Command {
	return a.idCommand("forget SCOPE", "Forget a scope's snapshots (captures in flight finish but are not kept)", a.completeScopes,
		func(ctx context.Context, c *client.Client, scope string) error {
			return client.Check(c.ForgetSnapshotsWithResponse(ctx, scope))
		})
}

// idCommand is a command of one argument, an id that complete offers, that
// calls do with it and prints nothing on success ({} with --json).
func (a *app) idCommand(use, short string, complete cobra.CompletionFunc, do func(ctx context.Context, c *client.Client, id string) error) *cobra.Command {
	return &cobra.Command{
		Use:               use,
		Short:             short,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: complete,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			if err := do(cmd.Context(), c, args[0]); err != nil {
				return err
			}
			if a.json {
				return a.printJSON(struct{}{})
			}
			return nil
		},
	}
}

// completeScopes offers the scopes of the server's snapshot cache.
func (a *app) completeScopes(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return a.completeFirst(cmd, args, func(c *client.Client) ([]string, error) {
		list, err := client.Result(c.ListSnapshotsWithResponse(cmd.Context()))
		if err != nil {
			return nil, err
		}
		var scopes []string
		for _, e := range list.Entries {
			if !slices.Contains(scopes, e.ScopeId) {
				scopes = append(scopes, e.ScopeId)
			}
		}
		return scopes, nil
	})
}

// completeFirst offers what names lists as a command's first argument,
// and nothing after it.
func (a *app) completeFirst(cmd *cobra.Command, args []string, names func(*client.Client) ([]string, error)) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := a.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	list, err := names(c)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	out := make([]cobra.Completion, len(list))
	for i, n := range list {
		out[i] = cobra.Completion(n)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
