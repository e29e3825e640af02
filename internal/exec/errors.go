package exec

import "errors"

// Errors a caller can tell apart with errors.Is. Each wraps the underlying cause,
// which is for logs only.
var (
	// ErrEmptyArgv means the spec names no program.
	ErrEmptyArgv = errors.New("argv must not be empty")
	// ErrCwdNotFound means the working directory does not exist or is not a directory.
	ErrCwdNotFound = errors.New("working directory not found")
	// ErrSpawn means the program could not be started (not found, not executable, ...).
	ErrSpawn = errors.New("program could not be started")
	// ErrShuttingDown means the manager no longer starts processes.
	ErrShuttingDown = errors.New("server is shutting down")
	// ErrProcessExists means the asked-for process id is taken by a running or
	// retained process.
	ErrProcessExists = errors.New("process already exists")
	// ErrTooManyProcesses means the manager runs as many processes as it may.
	ErrTooManyProcesses = errors.New("too many running processes")
	// ErrOutputLost means output after the asked-for seq was evicted from the
	// process's ring before it was read.
	ErrOutputLost = errors.New("output was evicted before it was read")
	// ErrSeqAhead means the asked-for seq is at or beyond the next seq: it names
	// output the process has not produced, which no reader can have seen.
	ErrSeqAhead = errors.New("seq is beyond the output produced")
	// ErrStdinClosed means the running process's stdin is not open for writes:
	// it was not started with PipeStdin, a write closed it, or the child closed
	// its end.
	ErrStdinClosed = errors.New("stdin is closed")
	// ErrWriteIDReused means a stdin write's id was used before for other
	// data (or another close): a retry must carry the same.
	ErrWriteIDReused = errors.New("writeId was used for other data")
	// ErrProcessExited means the process has exited: its stdin is gone.
	ErrProcessExited = errors.New("process has exited")
	// ErrNotATTY means the process does not run on a terminal.
	ErrNotATTY = errors.New("process has no terminal")
)
