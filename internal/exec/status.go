package exec

import "time"

// Status is how a process ended.
type Status string

// The endings of a process.
const (
	StatusRunning     Status = "running"
	StatusExited      Status = "exited"
	StatusSignaled    Status = "signaled"
	StatusTimedOut    Status = "timed_out"
	StatusIdleTimeout Status = "idle_timeout"
	StatusTerminated  Status = "terminated"
	StatusShutdown    Status = "shutdown"
)

// Result is the ending of a process and the output it produced.
type Result struct {
	Status Status
	// ExitCode is nil when the process was ended by a signal.
	ExitCode *int
	// Signal names the ending signal (for example "SIGKILL"), or is empty.
	Signal   string
	Duration time.Duration
	Stdout   Output
	Stderr   Output
}

// Output is what a stream produced: the kept bytes, how many were produced in all,
// and whether any were dropped.
type Output struct {
	Data      []byte
	Total     int64
	Truncated bool
}
