package shellsnap

import (
	"os"

	"golang.org/x/sys/unix"
)

// PrivateDirs are the directories where a server keeps the shell state that
// its commands run: the snapshots' restore files (Files) and the sessions'
// files of one command (Scratch, in memory when it can be). A command that
// could write there could change what another command runs, outside that
// command's sandbox, so no sandboxed command may (sandbox.Options.Private).
// The zero value makes each Cache and SessionFiles a directory of its own in
// the temporary directory, as a test wants.
type PrivateDirs struct {
	Files, Scratch string
}

// NewPrivateDirs makes a server's private directories: Files in /run when
// the server may write there (as root), where a command's writable root is
// unlikely to reach, else in the temporary directory; Scratch the same
// directory when it is in memory (tmpfs), else one in /dev/shm when that is,
// else none (the files then go with the restore files).
func NewPrivateDirs() (PrivateDirs, error) {
	parent := os.TempDir()
	if unix.Access("/run", unix.W_OK) == nil {
		parent = "/run"
	}
	files, err := os.MkdirTemp(parent, "snapexec-")
	if err != nil {
		return PrivateDirs{}, err
	}
	d := PrivateDirs{Files: files}
	switch {
	case inMemory(files):
		d.Scratch = files
	case inMemory("/dev/shm"):
		if d.Scratch, err = os.MkdirTemp("/dev/shm", "snapexec-"); err != nil {
			d.Scratch = ""
		}
	}
	return d, nil
}

// List returns the directories d holds.
func (d PrivateDirs) List() []string {
	var dirs []string
	for _, dir := range []string{d.Files, d.Scratch} {
		if dir != "" && (len(dirs) == 0 || dirs[0] != dir) {
			dirs = append(dirs, dir)
		}
	}
	return dirs
}

// Remove removes the directories and everything in them, once every Cache
// and SessionFiles made in them is closed.
func (d PrivateDirs) Remove() {
	for _, dir := range d.List() {
		os.RemoveAll(dir)
	}
}

// inMemory reports whether dir is on a tmpfs.
func inMemory(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.TMPFS_MAGIC
}
