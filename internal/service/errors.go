package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// ErrNotFound means the process or snapshot scope asked for does not exist.
var ErrNotFound = errors.New("not found")

// StdinNotReadError means a stdin write waited Limits.StdinWriteBound for
// the child to read and gave up: Written of its bytes went in (after
// AlreadyWritten, with a write id), which a retry with the same write id
// goes on from.
type StdinNotReadError struct {
	exec.StdinWrite
	Bound time.Duration
}

// Error says how much went in.
func (e *StdinNotReadError) Error() string {
	return fmt.Sprintf("the process did not read its stdin for %s: %d bytes of this write went in", e.Bound, e.Written)
}

// ProgramError means a program the request named in Field (shell.path) cannot
// be started: it is the request's fault, as a missing /exec program is, not
// the failure of what the program would have done. It wraps the
// exec.ErrSpawn.
type ProgramError struct {
	Field string
	Err   error
}

func (e *ProgramError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns the exec.ErrSpawn.
func (e *ProgramError) Unwrap() error { return e.Err }

// ErrTimedOutWaiting means a command's timeout ran out while it waited for
// its shell snapshot capture, so that it never started.
var ErrTimedOutWaiting = errors.New("the request's timeout ran out while its command waited for the shell snapshot capture")

// NotRunError means a command never ran: its request ended while it waited
// for its shell snapshot capture, which goes on for later commands. Status
// says why, and what the error is: exec.StatusTimedOut (its timeout ran
// out: ErrTimedOutWaiting), exec.StatusShutdown (the server began shutting
// down: exec.ErrShuttingDown) or exec.StatusTerminated (its client went
// away: context.Canceled).
type NotRunError struct {
	Status exec.Status
	// Snapshot is the receipt: outcome not_run, and the reason.
	Snapshot shellsnap.Receipt
}

// Error returns the receipt's reason.
func (e *NotRunError) Error() string { return e.Snapshot.Reason }

// Unwrap returns why the command never ran.
func (e *NotRunError) Unwrap() error {
	switch e.Status {
	case exec.StatusTimedOut:
		return ErrTimedOutWaiting
	case exec.StatusShutdown:
		return exec.ErrShuttingDown
	}
	return context.Canceled
}

// Output is the ending Exec answers for a command that never ran: its
// status and receipt, no process and no pid.
func (e *NotRunError) Output() ExecOutput {
	return ExecOutput{Result: exec.Result{Status: e.Status}, Snapshot: e.Snapshot}
}

// notRun is the NotRunError of a wait that ended with cause.
func notRun(cause error, r shellsnap.Receipt) *NotRunError {
	status, why := exec.StatusTerminated, "the client went away"
	switch {
	case errors.Is(cause, ErrTimedOutWaiting):
		status, why = exec.StatusTimedOut, "the request's timeout ran out"
	case errors.Is(cause, exec.ErrShuttingDown):
		status, why = exec.StatusShutdown, "the server began shutting down"
	}
	r.Outcome = shellsnap.OutcomeNotRun
	r.Reason = why + " while the command waited for its shell snapshot capture: it never ran"
	return &NotRunError{Status: status, Snapshot: r}
}
