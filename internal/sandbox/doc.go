// Package sandbox confines a command with the kernel: Landlock bounds what it
// may write and which processes it may signal, a network namespace bounds what
// it may reach, and its capabilities lose whatever would reach past both. The
// confinement is inherited by every descendant and cannot be lifted by them.
//
// Go's fork and exec run no code of ours in the child, so the confinement is
// applied to a thread of the server instead, just before that thread forks the
// child, which inherits the thread's credentials and namespaces: Start locks a
// fresh goroutine to its OS thread, confines the thread, starts the command
// and returns without unlocking, so that the Go runtime ends the thread rather
// than run other goroutines on it. Nothing reaches the child but what the
// kernel enforces: its argv, environment and open files are exactly the
// caller's.
//
// A request the kernel cannot enforce is refused with an *UnavailableError
// naming what is missing, before anything runs: a sandbox is never silently
// weaker than asked.
package sandbox
