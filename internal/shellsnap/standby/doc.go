// Package standby keeps standby shells (docs/design/standby.md): bash
// processes that restored a launch's shell snapshot before its command came,
// and wait for the go-ahead that carries the command, so that a warm command
// costs a go-ahead instead of a shell start and a restore.
//
// The Pool decides when a launch gets a standby, holds the shells as held
// processes of an exec.Manager (exec.Manager.Hold), releases one for a
// command whose launch it serves, and ends the idle ones on its bounds.
// The rest of the package is the shell: its command, which is Replay's with
// the user's script left for the go-ahead; the go-ahead message; and the
// exec-tail analysis that keeps a command run in a standby's eval from
// telling that it is not the last command of a bash -c string.
package standby
