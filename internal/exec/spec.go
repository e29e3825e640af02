package exec

import (
	"time"

	"github.com/snapexec/snapexec/internal/sandbox"
)

// KeepNoOutput as a Spec's MaxOutputBytes keeps no output in the result, only
// its totals: zero is taken by the manager's default.
const KeepNoOutput = -1

// Spec describes one process to run.
type Spec struct {
	// ID is the process's key in the manager's table, unique among running and
	// retained processes; empty means one is generated.
	ID string
	// Argv is the program and its arguments; Argv[0] without a slash is looked up
	// in the child's PATH (the server's when the child has none).
	Argv []string
	// Arg0, when set, is the argv[0] the program sees in place of Argv[0]
	// (a login shell's "-bash", a multi-call binary's name).
	Arg0 string
	// Dir is the working directory; empty means the server's.
	Dir string
	// Env is exactly the child's environment, as NAME=VALUE pairs. Nil is an empty
	// environment, never the server's.
	Env []string
	// Stdin is written to the child and then closed; empty means /dev/null.
	// With PipeStdin it is written first and stdin stays open.
	Stdin []byte
	// PipeStdin keeps stdin open for Process.WriteStdin until it is closed by a
	// write or the process ends.
	PipeStdin bool
	// TTY, when set, runs the process on a new pseudo-terminal of this size:
	// the child leads a new session whose controlling terminal it is, as its
	// foreground process group; stdin, stdout and stderr are the terminal.
	// Its output is the one stream Pty, stdin is always open (PipeStdin and
	// DiscardStderr do not apply), Signal reaches the terminal's foreground
	// group, and Resize changes its size.
	TTY *TTYSize
	// NewSession runs the process in a new session of its own, without a
	// controlling terminal (it leads its group as ever): an interactive
	// shell that is not on a terminal of its own (a login terminal's
	// snapshot capture) then cannot open the server's terminal, nor take
	// its foreground. A TTY process always leads a new session. Its kill,
	// and the end of its leader, reach every group of the session (a
	// job-control shell's jobs), as a terminal's do.
	NewSession bool
	// DiscardStderr sends stderr to /dev/null: the process has no stderr output.
	DiscardStderr bool
	// Timeout ends the process group when it has run this long; zero means none.
	Timeout time.Duration
	// IdleTimeout ends the process group when it has written nothing for this
	// long; zero means none.
	IdleTimeout time.Duration
	// MaxOutputBytes bounds the bytes kept per stream for the result: beyond it the
	// middle is dropped and the head and tail are kept, cut at UTF-8
	// characters' boundaries. Zero means the manager's
	// default; KeepNoOutput keeps none (the totals are still counted).
	MaxOutputBytes int
	// Sandbox confines the child and every descendant (package sandbox); the
	// zero policy confines nothing. A policy the manager cannot enforce is
	// refused before anything is spawned.
	Sandbox sandbox.Policy
}
