package main

import (
	"os"
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
	os.Exit(m.Run())
}
