package shellsnap

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"
)

// restoreGrace is how long a restore file outlives its snapshot: a command
// prepared with the snapshot just before it went may not have opened the
// file yet.
const restoreGrace = time.Minute

// restoreFiles is the private directory (0700) of a Cache's restore files,
// one file (0600) or directory (zsh's) per snapshot, named at random. A file goes some time after
// its snapshot is no longer reachable (evicted, forgotten, replaced: no cache
// entry and no command holds it), and the directory with all its files goes
// at Close. Only the server's own user can read them, as it can read its
// processes' environments, where the reference carries the state.
type restoreFiles struct {
	// in holds the directories below, made beneath the server's private
	// directories; zero makes them in the temporary directory.
	in PrivateDirs

	once sync.Once
	dir  string
	err  error

	zshOnce sync.Once
	zshDir  string
	zshErr  error

	scratchOnce sync.Once
	scratch     string // the directory of scratchDir's, in memory; "" for none

	mu     sync.Mutex
	closed bool
	timers map[*time.Timer]bool
}

// errRestoreFilesClosed is a write's error once the files are closed.
var errRestoreFilesClosed = errors.New("the shell snapshot cache is closed")

// directory creates the directory on first use; once the files are
// closed, it is an error.
func (f *restoreFiles) directory() (string, error) {
	f.once.Do(func() {
		f.dir, f.err = os.MkdirTemp(f.in.Files, "snapexec-restore-")
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return "", errRestoreFilesClosed
	}
	return f.dir, f.err
}

// write stores text as a new file and returns its path.
func (f *restoreFiles) write(text string) (string, error) {
	dir, err := f.directory()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, randomToken())
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// writeDir stores files (name to text) in a new directory and returns its
// path.
func (f *restoreFiles) writeDir(files map[string]string) (string, error) {
	dir, err := f.directory()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, randomToken())
	if err := os.Mkdir(path, 0o700); err != nil {
		return "", err
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(path, name), []byte(text), 0o600); err != nil {
			os.RemoveAll(path)
			return "", err
		}
	}
	return path, nil
}

// scratchDir is writeDir, and scratchFile write, for files that live as
// long as one command: in a directory in memory (memoryParent) when there
// is one, where a shell writes a state's dump for about 300 µs less CPU
// than on ext4 (which journals the change of time of each write, and bash
// writes a line at a time), and where the files are made and removed in a
// tenth of the time. What stays there is the functions' listing of each
// session's state (keepListing), moved from its command's directory.
func (f *restoreFiles) scratchDir(files map[string]string) (string, error) {
	root := f.scratchRoot()
	if root == "" {
		return f.writeDir(files)
	}
	path := filepath.Join(root, randomToken())
	if err := os.Mkdir(path, 0o700); err != nil {
		return f.writeDir(files) // full, or removed from under us
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(path, name), []byte(text), 0o600); err != nil {
			os.RemoveAll(path)
			return f.writeDir(files)
		}
	}
	return path, nil
}

// scratchFile is write for a file that lives as long as one command
// (scratchDir).
func (f *restoreFiles) scratchFile(text string) (string, error) {
	root := f.scratchRoot()
	if root == "" {
		return f.write(text)
	}
	path := filepath.Join(root, randomToken())
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		os.Remove(path)
		return f.write(text)
	}
	return path, nil
}

// scratchRoot makes the directory in memory on first use; "" when there
// is none.
func (f *restoreFiles) scratchRoot() string {
	f.scratchOnce.Do(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if parent := f.memoryParent(); parent != "" && !f.closed {
			f.scratch, _ = os.MkdirTemp(parent, "snapexec-scratch-")
		}
	})
	return f.scratch
}

// memoryParent is the private scratch directory, when f is made in the
// server's private directories; without them, the temporary directory when
// it is in memory (tmpfs), or else /dev/shm when that is. "" when none is.
func (f *restoreFiles) memoryParent() string {
	if f.in != (PrivateDirs{}) {
		return f.in.Scratch
	}
	for _, dir := range []string{os.TempDir(), "/dev/shm"} {
		if inMemory(dir) {
			return dir
		}
	}
	return ""
}

// zshCaptureDir returns the directory whose .zshenv starts every zsh
// capture, written on first use.
func (f *restoreFiles) zshCaptureDir() (string, error) {
	f.zshOnce.Do(func() {
		f.zshDir, f.zshErr = f.writeDir(map[string]string{".zshenv": zshCaptureEnv})
	})
	return f.zshDir, f.zshErr
}

// own makes path go restoreGrace after snap is no longer reachable.
func (f *restoreFiles) own(snap *Snapshot, path string) {
	runtime.AddCleanup(snap, f.release, path)
}

// release removes path restoreGrace from now, unless the directory goes
// first.
func (f *restoreFiles) release(path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(restoreGrace, func() {
		os.RemoveAll(path)
		f.mu.Lock()
		delete(f.timers, t)
		f.mu.Unlock()
	})
	if f.timers == nil {
		f.timers = map[*time.Timer]bool{}
	}
	f.timers[t] = true
}

// close removes the directory and every file in it.
func (f *restoreFiles) close() {
	f.mu.Lock()
	f.closed = true
	for t := range f.timers {
		t.Stop()
	}
	f.timers = nil
	f.mu.Unlock()
	// Once closed, a write fails: a directory made from now on would not
	// be ours to remove, and one never made must not turn a path into a
	// file name of the working directory.
	f.once.Do(func() { f.err = errRestoreFilesClosed })
	f.scratchOnce.Do(func() {})
	for _, dir := range []string{f.dir, f.scratch} {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
}

// randomToken returns 32 random hex digits.
func randomToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
