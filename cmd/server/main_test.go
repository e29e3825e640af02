package main

import (
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/snapexec/snapexec/internal/exec"
)

// serverEnv makes the test binary run main, as the real binary does: the
// end-to-end tests that need a server process of its own (kill -9, inherited
// signals) start this binary with it set.
const serverEnv = "SNAPEXEC_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	// A server started in-process re-runs this binary as its keeper: main
	// (run) serves that, as it does in the real binary.
	if os.Getenv(exec.KeeperEnv) != "" || os.Getenv(serverEnv) != "" {
		main()
		os.Exit(0)
	}
	unignoreSignals()
	os.Exit(m.Run())
}

// unignoreSignals has the runtime handle every signal this test binary
// started with ignored, so that what it starts begins with their default
// action: a login from a terminal ignores none, nor do the server's commands,
// but a test run under nohup, or as a background job of a script, ignores
// SIGHUP, or SIGINT and SIGQUIT, and the real login shells that the fidelity
// tests compare the server with would inherit that (handled signals are reset
// by exec, ignored ones are not). Signals 32 and up are libc's and the Go
// runtime's.
func unignoreSignals() {
	handled := make(chan os.Signal, 1)
	for sig := syscall.Signal(1); sig < 32; sig++ {
		if signal.Ignored(sig) {
			signal.Notify(handled, sig)
		}
	}
}
