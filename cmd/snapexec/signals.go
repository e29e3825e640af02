package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// signalNumbers gives Linux's number for each signal name a result may
// carry (signal(7)). The server runs on Linux, so a signalled command's
// 128+N uses Linux's N on any client system, as a shell on the server
// would report it.
var signalNumbers = map[string]int{
	"SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGILL": 4, "SIGTRAP": 5, "SIGABRT": 6,
	"SIGBUS": 7, "SIGFPE": 8, "SIGKILL": 9, "SIGUSR1": 10, "SIGSEGV": 11, "SIGUSR2": 12,
	"SIGPIPE": 13, "SIGALRM": 14, "SIGTERM": 15, "SIGSTKFLT": 16, "SIGCHLD": 17, "SIGCONT": 18,
	"SIGSTOP": 19, "SIGTSTP": 20, "SIGTTIN": 21, "SIGTTOU": 22, "SIGURG": 23, "SIGXCPU": 24,
	"SIGXFSZ": 25, "SIGVTALRM": 26, "SIGPROF": 27, "SIGWINCH": 28, "SIGIO": 29, "SIGPWR": 30,
	"SIGSYS": 31,
}

// interrupted is the cause of a context that a signal to snapexec ended
// (context.Cause): snapexec then exits 128+N for signal N, as a shell
// reports a command that N ended.
type interrupted struct{ sig syscall.Signal }

func (e interrupted) Error() string { return "snapexec: interrupted by " + e.sig.String() }

// status is the exit status for the signal: 128+N, this system's N.
func (e interrupted) status() int { return 128 + int(e.sig) }

// onSignals returns a copy of ctx that the first of sigs to arrive ends,
// with interrupted as its cause; stop ends it and lets the signals go.
func onSignals(ctx context.Context, sigs ...syscall.Signal) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	ch := make(chan os.Signal, 1)
	for _, sig := range sigs {
		signal.Notify(ch, sig)
	}
	go func() {
		select {
		case sig := <-ch:
			cancel(interrupted{sig.(syscall.Signal)})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel(context.Canceled)
	}
}
