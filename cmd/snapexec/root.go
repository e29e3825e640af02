package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/snapexec/snapexec/client"
)

// The CLI's own exit statuses; exec and run otherwise exit as their
// command did.
const (
	exitFailed = 1 // a request failed
	exitUsage  = 2 // the command line is wrong
	// exitRunFailed is exec's and run's when the command could not be run
	// or its ending is unknown, as ssh does: a script can tell it from the
	// statuses commands commonly use.
	exitRunFailed = 255
)

// defaultURL is where `go run ./cmd/server` listens.
const defaultURL = "http://127.0.0.1:8080"

// app is one invocation: the OS it was given and the global flags.
type app struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer

	url   string
	token string
	json  bool
}

// run is the whole CLI; it returns the exit status.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := onSignals(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	a := &app{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args[1:])
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return a.exitStatus(interruption(ctx, root.ExecuteContext(ctx)))
}

// interruption is err, or the signal that ended ctx (interrupted) when ctx
// has ended: whatever the command made of its end, it was the signal's.
func interruption(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "snapexec",
		Short: "Run commands on a snapexec server",
		Long: `snapexec runs commands on a snapexec server and manages its processes and
shell snapshots. exec and run pass the command's stdout, stderr and exit status
through as their own: 128+N when signal N ended the command, as a shell reports
it. snapexec interrupted by signal N itself (SIGINT, SIGTERM; SIGHUP while
attached) exits 128+N too.

The server is --url or $SNAPEXEC_URL (default ` + defaultURL + `; unix:/PATH for a
Unix domain socket); its token is --token or $SNAPEXEC_TOKEN.`,
		Version:       version(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&a.url, "url", "", "the server's URL (default $SNAPEXEC_URL, else "+defaultURL+")")
	// The token's default is not shown: help must never print it.
	pf.StringVar(&a.token, "token", "", "the server's bearer token (default $SNAPEXEC_TOKEN)")
	pf.BoolVar(&a.json, "json", false, "print JSON (machine output); errors too, on stderr")
	root.AddCommand(
		a.execCommand(), a.runCommand(),
		a.psCommand(), a.logsCommand(), a.killCommand(), a.attachCommand(), a.terminalCommand(),
		a.snapshotsCommand(), a.prewarmCommand(), a.forgetCommand(),
		a.sessionsCommand(),
	)
	return root
}

// version is the module's version and VCS revision from the build.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			v += " " + s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			v += " (modified)"
		}
	}
	return v
}

// client connects to the server the flags or the environment name.
func (a *app) client() (*client.Client, error) {
	url := a.url
	if url == "" {
		url = a.getenv("SNAPEXEC_URL")
	}
	if url == "" {
		url = defaultURL
	}
	token := a.token
	if token == "" {
		token = a.getenv("SNAPEXEC_TOKEN")
	}
	var opts []client.ClientOption
	if token != "" {
		opts = append(opts, client.WithToken(token))
	}
	if path, ok := strings.CutPrefix(url, "unix:"); ok {
		// Any loopback host passes the server's Host check; the dialer
		// goes to the socket whatever the URL says.
		dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
			return new(net.Dialer).DialContext(ctx, "unix", path)
		}
		url = "http://localhost"
		opts = append(opts, client.WithHTTPClient(&http.Client{Transport: &http.Transport{DialContext: dial}}))
	}
	return client.New(url, opts...)
}

// printJSON writes v as one line of JSON on stdout.
func (a *app) printJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "%s\n", b)
	return err
}

// usageError is a command line that is wrong.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usageArgs marks the positional-argument errors of check as usage errors.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// exitCode ends the CLI with a status and prints nothing: a command's own
// status passed on.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// runFailure is exec's or run's failure to run a command or learn its
// ending; it exits exitRunFailed.
type runFailure struct{ err error }

func (e runFailure) Error() string { return e.err.Error() }
func (e runFailure) Unwrap() error { return e.err }

// exitStatus reports err, if any, on stderr and says how the CLI exits.
func (a *app) exitStatus(err error) int {
	var code exitCode
	var sig interrupted
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	case errors.As(err, &sig):
		return sig.status() // which the user knows: nothing is said
	}
	status := exitFailed
	var usage usageError
	var failure runFailure
	switch {
	case errors.As(err, &usage):
		status = exitUsage
	case errors.As(err, &failure):
		status = exitRunFailed
	}
	a.reportError(err)
	return status
}

// errorJSON is an error as --json prints it: the problem's fields, or only
// a detail for an error that is no problem answer.
type errorJSON struct {
	Status    int    `json:"status,omitempty"`
	Code      string `json:"code,omitempty"`
	Title     string `json:"title,omitempty"`
	Detail    string `json:"detail"`
	Field     string `json:"field,omitempty"`
	RequestID string `json:"requestId,omitempty"`
}

func (a *app) reportError(err error) {
	var problem *client.Error
	isProblem := errors.As(err, &problem)
	if a.json {
		out := errorJSON{Detail: err.Error()}
		if isProblem {
			out = errorJSON{Status: problem.Status, Code: string(problem.Code), Title: problem.Title, Detail: problem.Detail, Field: problem.Field, RequestID: problem.RequestID}
		}
		b, _ := json.Marshal(out)
		fmt.Fprintf(a.stderr, "%s\n", b)
		return
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "snapexec: ") {
		msg = "snapexec: " + msg
	}
	fmt.Fprintln(a.stderr, msg)
	var usage usageError
	if errors.As(err, &usage) {
		fmt.Fprintln(a.stderr, "Run 'snapexec help' for usage.")
	}
}
