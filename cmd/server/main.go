// Command server runs snapexec, the exec server with cached shell snapshots.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if err := run(context.Background(), os.Args, os.Environ(), os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "snapexec:", err)
		os.Exit(1)
	}
}
