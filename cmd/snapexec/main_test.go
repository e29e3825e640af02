package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/testserver"
)

// asCLI tells the test binary, run again by cli, to be snapexec: the
// subprocess runs the CLI's own code, race detector included, with no
// second build.
const asCLI = "SNAPEXEC_CLI_TEST_AS_MAIN"

// TestMain is snapexec itself when cli runs the test binary; otherwise it
// starts the one server the tests share (SNAPEXEC_URL, SNAPEXEC_TOKEN).
func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		main()
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	srv, err := testserver.Launch(testserver.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := srv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "%v; server log:\n%s", err, srv.Log())
		}
	}()
	os.Setenv("SNAPEXEC_URL", srv.URL)
	os.Setenv("SNAPEXEC_TOKEN", srv.Token)
	return m.Run()
}

// cliEnv is the environment that makes the test binary snapexec.
func cliEnv() []string {
	// Under -race, a binary that exits 0 first sleeps a second
	// (atexit_sleep_ms) for goroutines to report; the CLI has none left.
	return append(os.Environ(), asCLI+"=1", "GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"))
}

// result is how one run of the CLI ended.
type result struct {
	stdout, stderr []byte
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
}

// cli runs snapexec with args against the shared server; env entries
// (KEY=VALUE) go over its environment.
func cli(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(cliEnv(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
	default:
		t.Fatalf("snapexec %s: %v; stderr:\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return result{stdout: stdout.Bytes(), stderr: stderr.Bytes(), code: cmd.ProcessState.ExitCode()}
}
