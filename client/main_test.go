package client_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/snapexec/snapexec/internal/testserver"
)

// TestMain starts one real server for the package's tests and examples;
// the examples find it as a user would, through SNAPEXEC_URL and
// SNAPEXEC_TOKEN.
func TestMain(m *testing.M) {
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
