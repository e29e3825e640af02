package files

import (
	"errors"
	"io"
	"io/fs"
	"syscall"
)

// Errors a caller can tell apart with errors.Is. Each wraps the underlying
// cause, which is for logs only.
var (
	// ErrInvalidPath means a path is empty, relative, too long (or one of its
	// names is) or contains NUL.
	ErrInvalidPath = errors.New("invalid path")
	// ErrOutsideRoot means a path, or a symlink on its way, leads outside
	// every root.
	ErrOutsideRoot = errors.New("path is outside the roots")
	// ErrNotFound means the path, or its parent directory, does not exist.
	ErrNotFound = errors.New("not found")
	// ErrIsDirectory means a file was expected and the path is a directory.
	ErrIsDirectory = errors.New("is a directory")
	// ErrNotADirectory means a directory was expected, for the path or one of
	// its parents.
	ErrNotADirectory = errors.New("not a directory")
	// ErrNotRegular means the path is neither a regular file nor a directory
	// (a FIFO, a socket, a device), which is never read: it could block or
	// never end.
	ErrNotRegular = errors.New("not a regular file")
	// ErrNotEmpty means a directory to remove has entries and recursive was
	// not asked for.
	ErrNotEmpty = errors.New("directory not empty")
	// ErrExists means the destination exists and was not to be replaced.
	ErrExists = errors.New("already exists")
	// ErrDestinationNotEmpty means the destination of a move or a copy is
	// a directory with entries, which nothing replaces.
	ErrDestinationNotEmpty = errors.New("destination is a directory with entries")
	// ErrPreconditionFailed means the file's ETag is not the one the write
	// was conditioned on (it changed, or it is gone).
	ErrPreconditionFailed = errors.New("precondition failed")
	// ErrTooLarge means a write or a copy exceeds the size limit; nothing was
	// changed.
	ErrTooLarge = errors.New("file too large")
	// ErrIsRoot means the operation would remove or move a root itself.
	ErrIsRoot = errors.New("operation not allowed on a root")
	// ErrCrossDevice means a move between two filesystems, which a rename
	// cannot do.
	ErrCrossDevice = errors.New("move across filesystems")
	// ErrCutShort means the content ended before its own declared end (an
	// upload whose client went away); nothing was changed.
	ErrCutShort = errors.New("content cut short")
	// ErrMoveIntoItself means a move would put a directory beneath itself.
	ErrMoveIntoItself = errors.New("directory moved into itself")
	// ErrSameFile means the source and the destination of a move or a copy
	// are one file: one entry, two hard links of one file, or a symlink and
	// the file it leads to. Nothing was changed.
	ErrSameFile = errors.New("source and destination are the same file")
	// ErrInvalidCursor means a List or Walk cursor is not one that a page
	// gives.
	ErrInvalidCursor = errors.New("invalid cursor")
)

// errPathEscapes is os.Root's message for a path that leads outside it; the
// error itself is not exported. TestEscapes pins it.
const errPathEscapes = "path escapes from parent"

// classify wraps err with the sentinel its cause means, or returns it as is.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var sentinel error
	var errno syscall.Errno
	switch {
	case isEscape(err):
		sentinel = ErrOutsideRoot
	case errors.Is(err, io.ErrUnexpectedEOF):
		sentinel = ErrCutShort
	case errors.As(err, &errno):
		switch errno {
		case syscall.ENOENT:
			sentinel = ErrNotFound
		case syscall.EISDIR:
			sentinel = ErrIsDirectory
		case syscall.ENOTDIR:
			sentinel = ErrNotADirectory
		case syscall.ENOTEMPTY:
			sentinel = ErrNotEmpty
		case syscall.EEXIST:
			sentinel = ErrExists
		case syscall.EXDEV:
			sentinel = ErrCrossDevice
		case syscall.EFBIG:
			sentinel = ErrTooLarge
		case syscall.ENAMETOOLONG:
			sentinel = ErrInvalidPath
		case syscall.ENXIO:
			// The answer of an open of a socket, or of a device without
			// its hardware.
			sentinel = ErrNotRegular
		case syscall.ELOOP:
			// A symlink loop inside the root, or a final symlink opened
			// with O_NOFOLLOW: neither leads anywhere.
			sentinel = ErrNotFound
		}
	case errors.Is(err, fs.ErrNotExist):
		sentinel = ErrNotFound
	}
	if sentinel == nil {
		return err
	}
	return &wrapped{sentinel: sentinel, cause: err}
}

func isEscape(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == errPathEscapes {
			return true
		}
	}
	return false
}

// wrapped is a sentinel with its cause: errors.Is matches both.
type wrapped struct {
	sentinel, cause error
}

func (w *wrapped) Error() string   { return w.sentinel.Error() + ": " + w.cause.Error() }
func (w *wrapped) Unwrap() []error { return []error{w.sentinel, w.cause} }

// fail wraps sentinel with a cause of its own.
func fail(sentinel error, cause string) error {
	return &wrapped{sentinel: sentinel, cause: errors.New(cause)}
}
