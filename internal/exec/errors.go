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
)
