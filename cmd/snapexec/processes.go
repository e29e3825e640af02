package main

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/snapexec/snapexec/client"
)

func (a *app) psCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "ps",
		Short: "List running and recently ended processes",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			list, err := client.Result(c.ListProcessesWithResponse(cmd.Context()))
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(list)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tPID\tSTATUS\tEXIT\tSTARTED\tCOMMAND")
			for _, p := range list.Processes {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", p.ProcessId, p.Pid, p.Status, ending(p),
					p.StartedAt.Local().Format(time.DateTime), strings.Join(p.Argv, " "))
			}
			return tw.Flush()
		},
	}
}

// ending is a process's exit code, or the signal that ended it, or "-"
// while it runs.
func ending(p client.Process) string {
	switch {
	case p.ExitCode != nil:
		return strconv.Itoa(*p.ExitCode)
	case p.Signal != nil:
		return *p.Signal
	}
	return "-"
}

func (a *app) logsCommand() *cobra.Command {
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs [-f] ID",
		Short: "Print a process's output; with -f, follow it to its end",
		Long: `Print the output the server holds of a process, stdout and stderr each to its own,
byte for byte (with --json, one chunk per line). With -f, go on as it comes until
the process ends, resuming after a dropped connection without losing or repeating
output, and exit with the process's status as exec does; with --json, the last
line is the ending ({"type":"exit","status":...,"exitCode":...,"signal":...},
exitCode or signal null).`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeProcesses,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			if follow {
				s, err := c.Events(cmd.Context(), args[0], 0)
				if err != nil {
					return err
				}
				return a.follow(s)
			}
			// What the server holds now, read in pages until none is left.
			var after int64
			wait := 0
			for {
				out, err := client.Result(c.ReadProcessOutputWithResponse(cmd.Context(), args[0],
					&client.ReadProcessOutputParams{AfterSeq: &after, WaitMs: &wait}))
				if err != nil {
					return err
				}
				if len(out.Chunks) == 0 {
					return nil
				}
				for _, chunk := range out.Chunks {
					if err := a.writeChunk(chunk); err != nil {
						return err
					}
				}
				after = out.NextSeq - 1
			}
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "follow the output until the process ends")
	return cmd
}

func (a *app) killCommand() *cobra.Command {
	var signal string
	cmd := &cobra.Command{
		Use:   "kill [--signal SIG] ID",
		Short: "End a process's group (SIGTERM, a grace period, SIGKILL), or send it a signal",
		Long: `Without --signal, terminate the process's group: SIGTERM, then SIGKILL after the
server's grace period. With --signal, send that one signal (SIGINT, SIGTERM, SIGKILL
or SIGHUP; INT, int or 2 name SIGINT too) to the group and nothing more.`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeProcesses,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			id := args[0]
			if signal == "" {
				res, err := client.Result(c.TerminateProcessWithResponse(cmd.Context(), id))
				if err != nil {
					return err
				}
				if a.json {
					return a.printJSON(res)
				}
				if !res.Running {
					fmt.Fprintf(a.stderr, "snapexec: %s had already ended\n", id)
				}
				return nil
			}
			res, err := client.Result(c.SignalProcessWithResponse(cmd.Context(), id, client.SignalRequest{Signal: signalName(signal)}))
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(res)
			}
			if !res.Delivered {
				fmt.Fprintf(a.stderr, "snapexec: %s had already ended\n", id)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&signal, "signal", "s", "", "send this signal only: SIGINT, SIGTERM, SIGKILL or SIGHUP")
	_ = cmd.RegisterFlagCompletionFunc("signal", cobra.FixedCompletions(
		[]string{"SIGINT", "SIGTERM", "SIGKILL", "SIGHUP"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// signalName spells a signal as the server does: INT, int, SIGINT and 2
// are all SIGINT. A name it does not know goes as given, for the server to
// refuse with its own problem.
func signalName(s string) client.SignalRequestSignal {
	if n, err := strconv.Atoi(s); err == nil {
		for name, num := range signalNumbers {
			if num == n {
				return client.SignalRequestSignal(name)
			}
		}
		return client.SignalRequestSignal(s)
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if _, ok := signalNumbers[name]; ok {
		return client.SignalRequestSignal(name)
	}
	return client.SignalRequestSignal(s)
}

// completeProcesses offers the ids of the server's processes.
func (a *app) completeProcesses(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := a.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	list, err := client.Result(c.ListProcessesWithResponse(cmd.Context()))
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var ids []cobra.Completion
	for _, p := range list.Processes {
		ids = append(ids, cobra.CompletionWithDesc(p.ProcessId, string(p.Status)+" "+strings.Join(p.Argv, " ")))
	}
	return ids, cobra.ShellCompDirectiveNoFileComp
}
