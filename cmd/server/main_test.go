package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"github.com/snapexec/snapexec/internal/exec"
)

// serverEnv makes the test binary run main, as the real binary does: the
// end-to-end tests that need a server process of its own (kill -9, inherited
// signals) start this binary with it set.
const serverEnv = "SNAPEXEC_TEST_RUN_MAIN"

// dialEnv makes the test binary a client of the socket it names: it asks
// the server there to run a command that writes dialFileEnv's file, and
// prints the answer's status line (TestSandboxedCommandsCannotUseTheSocket).
const (
	dialEnv     = "SNAPEXEC_TEST_DIAL"
	dialFileEnv = "SNAPEXEC_TEST_DIAL_FILE"
)

func TestMain(m *testing.M) {
	// A server started in-process re-runs this binary as its keeper: main
	// (run) serves that, as it does in the real binary.
	if os.Getenv(exec.KeeperEnv) != "" || os.Getenv(serverEnv) != "" {
		main()
		os.Exit(0)
	}
	if sock := os.Getenv(dialEnv); sock != "" {
		fmt.Println(dialSocket(sock, os.Getenv(dialFileEnv)))
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

// dialSocket posts to the server at the socket sock a command that writes
// file, and returns the answer's status line, or the error.
func dialSocket(sock, file string) string {
	c, err := net.Dial("unix", sock)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer c.Close()
	body := `{"argv":["/bin/sh","-c","echo escaped > ` + file + `"]}`
	if _, err := fmt.Fprintf(c, "POST /exec HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body); err != nil {
		return "write: " + err.Error()
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "read: " + err.Error()
	}
	return strings.TrimSpace(line)
}
