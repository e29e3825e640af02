package files

import (
	"errors"
	"os"

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
// not followed. A root itself is never removed, nor a directory that holds
// one.
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
	dir, name, err := t.openParent()
	if err != nil {
		return err
	}
	defer dir.Close()
	if err := f.refuseRoots(dir, name, t.root); err != nil {
		return err
	}
	if recursive {
		return classify(t.root.r.RemoveAll(t.rel))
	}
	defer f.holdDropped(dir, name)()
	err = t.root.r.Remove(t.rel)
	if errors.Is(err, unix.EEXIST) {
		return fail(ErrNotEmpty, t.abs)
	}
	return classify(err)
}

// Move renames src to dst, which may be in another root of the same
// filesystem; an existing dst is replaced only with overwrite (a directory
// only by a directory, and only when empty: one with entries is
// ErrDestinationNotEmpty). A root itself is never moved nor replaced, nor a
// directory that holds one (ErrIsRoot, with overwrite or without: no
// overwrite would do); a directory is never moved beneath itself
// (ErrMoveIntoItself); nor is a file moved onto itself (ErrSameFile).
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
		return fail(ErrIsRoot, to.abs)
	}
	if from.dir || to.dir {
		// Either path names a directory (resolve has refused a file at
		// it): so must what is moved be, as rename(2) has it.
		if fi, err := from.root.r.Lstat(from.rel); err == nil && !fi.IsDir() {
			return fail(ErrNotADirectory, from.abs+" is not a directory, and a path ending in / names one")
		}
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
	if err := f.refuseRoots(fromDir, fromName, from.root); err != nil {
		return err
	}
	if err := f.refuseRoots(toDir, toName, to.root); err != nil {
		return err
	}
	// Checked before the rename, which follows at once; another program
	// that makes them one file in between is not seen.
	if same, err := sameFile(fromDir, fromName, toDir, toName); err != nil {
		return err
	} else if same {
		return fail(ErrSameFile, from.abs+" and "+to.abs)
	}
	flags := uint(0)
	if overwrite {
		defer f.holdDropped(toDir, toName)()
	} else {
		flags = unix.RENAME_NOREPLACE
	}
	// Both directories were opened beneath their roots and both names are
	// single components, so the rename cannot reach outside either root.
	err = unix.Renameat2(int(fromDir.Fd()), fromName, int(toDir.Fd()), toName, flags)
	switch {
	case overwrite && (errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST)),
		errors.Is(err, unix.EISDIR) && hasEntries(toDir, toName):
		// rename(2)'s answers for a directory with entries replaced by a
		// directory, and for any directory replaced by a file.
		return fail(ErrDestinationNotEmpty, to.abs)
	case errors.Is(err, unix.ENOTEMPTY):
		return fail(ErrExists, to.abs)
	case errors.Is(err, unix.EINVAL):
		// rename(2)'s answer for a directory moved beneath itself.
		return fail(ErrMoveIntoItself, from.abs+" into "+to.abs)
	}
	return classify(err)
}

// sameFile reports whether the entry fromName in fromDir and the entry toName
// in toDir are one file, as mv refuses them ("are the same file"): one inode
// (one entry by two paths, or two hard links of one file), or a symlink from
// that leads, through one link or several, to the entry to. A rename of the
// first kind does nothing and says it succeeded; of the second, it leaves in
// the file's place a link to itself, and the file's content is gone. The
// link is followed as the kernel follows it, for this comparison only, even
// an absolute one or one through a place outside the root: that is where it
// leads once it has the file's name. A destination that is not there is no
// file.
func sameFile(fromDir *os.File, fromName string, toDir *os.File, toName string) (bool, error) {
	dst, ok, err := lstatAt(toDir, toName)
	if err != nil || !ok {
		return false, err
	}
	src, ok, err := lstatAt(fromDir, fromName)
	if err != nil || !ok {
		return false, err // the rename answers for a source not there
	}
	if src.dev == dst.dev && src.ino == dst.ino {
		return true, nil
	}
	if src.mode&unix.S_IFMT != unix.S_IFLNK {
		return false, nil
	}
	var st unix.Stat_t
	if err := unix.Fstatat(int(fromDir.Fd()), fromName, &st, 0); err != nil {
		return false, nil // a link that leads nowhere does not lead to to
	}
	return uint64(st.Dev) == dst.dev && st.Ino == dst.ino, nil
}

// hasEntries reports whether the entry name in dir is a directory with
// entries; a symlink is not followed.
func hasEntries(dir *os.File, name string) bool {
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	d := os.NewFile(uintptr(fd), name)
	defer d.Close()
	names, _ := d.Readdirnames(1)
	return len(names) > 0
}

// refuseRoots fails with ErrIsRoot when the entry name in dir is a directory
// that is a root other than own, or holds one at any depth: a root is never
// removed, moved or replaced, not even with a directory of an outer root
// that holds it, however a path reaches it. An entry that is not a
// directory, or none, holds no root.
func (f *FS) refuseRoots(dir *os.File, name string, own *root) error {
	var st unix.Stat_t
	err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil // the operation itself answers for what it finds
	}
	for _, r := range f.roots {
		if r == own {
			continue // what is beneath a root cannot hold it
		}
		in, err := r.within(uint64(st.Dev), st.Ino)
		if err != nil {
			return classify(err)
		}
		if in {
			return fail(ErrIsRoot, r.name)
		}
	}
	return nil
}

// within reports whether r's directory is the directory of device dev and
// inode ino, or lies beneath it. Directories are compared by what they are,
// not by their names: from r's own up through "..", to the top.
func (r *root) within(dev, ino uint64) (bool, error) {
	top, err := r.r.OpenFile(".", os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return false, err
	}
	fd, err := unix.Openat(int(top.Fd()), ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	top.Close()
	if err != nil {
		return false, err
	}
	defer func() { unix.Close(fd) }()
	var below unix.Stat_t
	for first := true; ; first = false {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return false, err
		}
		switch {
		case uint64(st.Dev) == dev && st.Ino == ino:
			return true, nil
		case !first && st.Dev == below.Dev && st.Ino == below.Ino:
			return false, nil // the top: its ".." is itself
		}
		up, err := unix.Openat(fd, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return false, err
		}
		unix.Close(fd)
		fd, below = up, st
	}
}
