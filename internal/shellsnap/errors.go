package shellsnap

import (
	"errors"
	"fmt"
)

// Reason is the bounded enumeration of capture failure causes, used as the
// failure_reason span attribute (docs/design/snapshots.md#capture). It never
// carries free text.
type Reason string

// The failure reasons, those of the reference's list that a capture here can
// give. The parse of its output reports the last two; the capture reports
// the others.
const (
	ReasonMissingCommand     Reason = "missing_command"
	ReasonSpawnFailed        Reason = "spawn_failed"
	ReasonReadFailed         Reason = "read_failed"
	ReasonTooLarge           Reason = "too_large"
	ReasonNonzeroExit        Reason = "nonzero_exit"
	ReasonTimeout            Reason = "timeout"
	ReasonMissingEnvironment Reason = "missing_environment"
	ReasonMissingState       Reason = "missing_state"
)

// CaptureError is a failed capture: a Reason for metrics and the reference's
// message, such as "shell snapshot is missing its environment" or
// "shell snapshot capture exited with exit status: 7".
type CaptureError struct {
	Reason  Reason
	Message string
}

// Error returns the message.
func (e *CaptureError) Error() string { return e.Message }

// Errors a request can get; everything else falls back silently.
var (
	// ErrInvalidScope means the scope id is empty or longer than MaxScopeBytes.
	ErrInvalidScope = fmt.Errorf("shell snapshot scope must be non-empty and at most %d bytes", MaxScopeBytes)
	// ErrUnsupportedShell means the shell name is not bash, zsh or sh.
	ErrUnsupportedShell = errors.New("shell snapshots are unsupported for this shell")
	// ErrWaitEnded means the request's context ended while its command waited
	// for the capture, which goes on: the command must not run. It comes
	// wrapped with the context's cause.
	ErrWaitEnded = errors.New("the request ended while its command waited for the shell snapshot capture")
)
