// Command snapexec is the command-line client of a snapexec server: it runs
// commands there (their output, byte for byte, and exit status as its own),
// follows background processes, attaches this terminal to theirs, and
// manages the snapshot cache.
//
//	snapexec exec -- make test
//	snapexec run --bg -- ./long-job.sh
//	snapexec logs -f ID
//	snapexec attach ID
//
// It finds the server through --url or SNAPEXEC_URL and its token through
// --token or SNAPEXEC_TOKEN; `snapexec help` lists the commands.
package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}
