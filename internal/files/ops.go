package files

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Mkdir makes the directory at path and any parent it lacks, like mkdir -p;
// an existing directory is no error, an existing file is ErrNotADirectory.
func (f *FS) Mkdir(path string) error {
	t, err := f.resolve(path)
	if err != nil {
		return err
	}
	err = t.root.r.MkdirAll(t.rel, 0o755)
	if errors.Is(err, unix.EEXIST) {
		// MkdirAll's answer for a file where the directory should be.
		return fail(ErrNotADirectory, t.abs)
	}
	return classify(err)
}

// Remove removes the file or empty directory at path; a directory with
// entries only with recursive, which removes them too. A symlink is removed,
// not followed. A root itself is never removed.
func (f *FS) Remove(path string, recursive bool) error {
	t, err := f.resolve(path)
	if err != nil {
		return err
	}
	if t.rel == "." {
		return fail(ErrIsRoot, t.abs)
	}
	if _, err := t.root.r.Lstat(t.rel); err != nil {
		return classify(err)
	}
	if recursive {
		return classify(t.root.r.RemoveAll(t.rel))
	}
	dir, name, err := t.openParent()
	if err != nil {
		return err
	}
	defer dir.Close()
	defer f.holdDropped(dir, name)()
	err = t.root.r.Remove(t.rel)
	if errors.Is(err, unix.EEXIST) {
		return fail(ErrNotEmpty, t.abs)
	}
	return classify(err)
}

// Move renames src to dst, which may be in another root of the same
// filesystem; an existing dst is replaced only with overwrite (a directory
// only by a directory, and only when empty). A root itself is never moved.
func (f *FS) Move(src, dst string, overwrite bool) error {
	from, err := f.resolve(src)
	if err != nil {
		return err
	}
	to, err := f.resolve(dst)
	if err != nil {
		return err
	}
	if to.rel == "." {
		return fail(ErrExists, to.abs)
	}
	fromDir, fromName, err := from.openParent()
	if err != nil {
		return err
	}
	defer fromDir.Close()
	toDir, toName, err := to.openParent()
	if err != nil {
		return err
	}
	defer toDir.Close()
	flags := uint(0)
	if overwrite {
		defer f.holdDropped(toDir, toName)()
	} else {
		flags = unix.RENAME_NOREPLACE
	}
	// Both directories were opened beneath their roots and both names are
	// single components, so the rename cannot reach outside either root.
	err = unix.Renameat2(int(fromDir.Fd()), fromName, int(toDir.Fd()), toName, flags)
	if errors.Is(err, unix.ENOTEMPTY) {
		return fail(ErrExists, to.abs)
	}
	return classify(err)
}
