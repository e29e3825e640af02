package files

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"hash/maphash"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// copyBufferBytes is the size of each of an upload's two buffers: what a
// write holds in memory is twice this, whatever the file's size.
const copyBufferBytes = 256 << 10

// WriteOptions condition a write.
type WriteOptions struct {
	// IfMatch, when not nil, lists the ETags the entry may have: a write
	// against a file that has none of them (changed or removed since) fails
	// with ErrPreconditionFailed. An empty list, not nil, names no version,
	// and every write conditioned on it fails.
	IfMatch []string
	// MustNotExist makes the write fail with ErrExists when the entry exists,
	// atomically: of two such writes of one path, one wins.
	MustNotExist bool
	// Mode is the permission of a new file; 0 means 0o644. A replaced file
	// keeps its own permission bits (never setuid, setgid or sticky).
	Mode fs.FileMode
	// source is the file a Copy copies, which it never writes over:
	// ErrSameFile.
	source *rawStat
}

// Write replaces the file at path with what r yields, atomically: the content
// goes to an unnamed temporary file in the same directory (O_TMPFILE), is
// synced, and is then given its name by a rename, so that a reader sees the
// old file or the new one, never a part. When r fails or yields more than
// MaxFileBytes, or ends before its own declared end (ErrCutShort), the old
// file is left as it was and no temporary file remains. The parent directory
// must exist. An entry at path that is a FIFO, a socket or a device is not
// replaced: ErrNotRegular. A symlink at path is followed beneath the root, as a read
// follows it: the file it names is written (made, when there is none), and
// the link stays. Write returns the new file's Info.
func (f *FS) Write(path string, r io.Reader, o WriteOptions) (Info, error) {
	t, err := f.resolve(path)
	if err != nil {
		return Info{}, err
	}
	// Checked before the upload too, so that a doomed one is not received.
	dir, name, old, exists, err := t.openWritten()
	if err != nil {
		return Info{}, err
	}
	defer dir.Close()
	if err := o.check(t.abs, old, exists); err != nil {
		return Info{}, err
	}
	mode := o.Mode.Perm()
	if mode == 0 {
		mode = 0o644
	}
	if exists {
		mode = fs.FileMode(old.mode & 0o777)
	}

	tmp, tmpName, err := f.createTemp(dir, name, mode)
	if err != nil {
		return Info{}, classify(err)
	}
	published := false
	defer func() {
		tmp.Close()
		if tmpName != "" && !published {
			_ = unix.Unlinkat(int(dir.Fd()), tmpName, 0)
		}
	}()
	// A limit one byte past the bound tells a file of exactly the bound from
	// a larger one.
	limited := io.LimitReader(r, f.opts.MaxFileBytes+1)
	var n int64
	switch src := r.(type) {
	case *os.File:
		// A copy: the kernel copies, without passing through us.
		n, err = tmp.ReadFrom(limited)
	case Splicer:
		n, err = spliceAll(tmp, src, f.opts.MaxFileBytes+1)
	default:
		n, err = copyOverlapped(&writeBehind{f: tmp}, limited)
	}
	if err != nil {
		return Info{}, classify(err)
	}
	if n > f.opts.MaxFileBytes {
		return Info{}, fail(ErrTooLarge, strconv.FormatInt(f.opts.MaxFileBytes, 10)+" bytes at most")
	}
	if err := tmp.Sync(); err != nil {
		return Info{}, err
	}

	// The lock is the written entry's, by its directory's identity, so that
	// writers through a symlink and through the file's own name share it.
	dirSt, err := fstat(dir)
	if err != nil {
		return Info{}, classify(err)
	}
	mu := &f.publish[maphash.Comparable(f.seed, entryKey{dirSt.dev, dirSt.ino, name})%uint64(len(f.publish))]
	mu.Lock()
	defer mu.Unlock()
	// The last check, under the lock every writer of this path takes; the
	// rename follows at once. Another program writing in the microseconds
	// between them is not seen: no syscall renames on a condition.
	if old, exists, err = lstatAt(dir, name); err != nil {
		return Info{}, err
	}
	if err := o.check(t.abs, old, exists); err != nil {
		return Info{}, err
	}
	if tmpName == "" {
		// Give the unnamed file a name to rename from.
		if tmpName, err = linkTemp(tmp, dir, name); err != nil {
			return Info{}, classify(err)
		}
	}
	flags := uint(0)
	if o.MustNotExist {
		// The lock keeps out this package's writers; NOREPLACE keeps out a
		// file another program made since the check.
		flags = unix.RENAME_NOREPLACE
	}
	if f.beforeRename != nil {
		f.beforeRename()
	}
	if exists {
		defer f.holdDropped(dir, name)()
	}
	if err := unix.Renameat2(int(dir.Fd()), tmpName, int(dir.Fd()), name, flags); err != nil {
		return Info{}, classify(err)
	}
	published = true
	// The rename is durable once the directory is.
	_ = dir.Sync()
	st, err := fstat(tmp)
	if err != nil {
		return Info{}, classify(err)
	}
	return infoOf(t.abs, st), nil
}

// entryKey names a directory entry by its directory's device and inode.
type entryKey struct {
	dev, ino uint64
	name     string
}

// maxWriteLinks bounds the symlinks a write follows from its path to the file
// it writes, as os.Root bounds those on a path's way.
const maxWriteLinks = 8

// openWritten opens the directory of the file a write to t writes, and
// returns it with the file's name there and the entry as it is (exists is
// false when there is none). That file is t's entry, or, while the entry is
// a symlink, the one it names, resolved beneath t's root as a read of t
// resolves it, so that the link stays and the file written keeps its mode
// and the ETag that Stat gives for t. A link that leads outside the root, or
// is absolute, is ErrOutsideRoot, as for a read.
func (t target) openWritten() (dir *os.File, name string, old rawStat, exists bool, err error) {
	if t.rel == "." {
		return nil, "", rawStat{}, false, fail(ErrIsDirectory, t.abs)
	}
	if t.dir {
		// resolve has refused a file there; a write would make one where
		// the path names a directory.
		if in, err := t.stat(); err == nil && in.Type == TypeDirectory {
			return nil, "", rawStat{}, false, fail(ErrIsDirectory, t.abs)
		}
		return nil, "", rawStat{}, false, fail(ErrNotADirectory, t.abs+"/ names a directory")
	}
	rel := t.rel
	for range maxWriteLinks + 1 {
		if dir, name, err = t.root.openParentOf(rel); err != nil {
			return nil, "", rawStat{}, false, err
		}
		old, exists, err = lstatAt(dir, name)
		if err == nil && exists && old.mode&unix.S_IFMT == unix.S_IFLNK {
			var link string
			link, err = readlinkAt(dir, name)
			dir.Close()
			switch {
			case err != nil:
				return nil, "", rawStat{}, false, classify(err)
			case strings.HasPrefix(link, "/"):
				return nil, "", rawStat{}, false, fail(ErrOutsideRoot, t.abs+" is an absolute symlink")
			case strings.HasSuffix(link, "/"):
				return nil, "", rawStat{}, false, fail(ErrIsDirectory, t.abs+" links to a directory")
			}
			rel = rel[:strings.LastIndexByte(rel, '/')+1] + link
			continue
		}
		if err != nil {
			dir.Close()
			return nil, "", rawStat{}, false, err
		}
		return dir, name, old, exists, nil
	}
	return nil, "", rawStat{}, false, classify(unix.ELOOP)
}

// readlinkAt is the target of the symlink name in dir.
func readlinkAt(dir *os.File, name string) (string, error) {
	buf := make([]byte, MaxPathBytes)
	n, err := unix.Readlinkat(int(dir.Fd()), name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// copyOverlapped copies r to w through two buffers, bigger than ReadFrom's
// 32 KiB (which costs a third of the throughput in syscalls,
// BenchmarkWrite): one is filled from r while the other is written to w, so
// that an upload's network reads and its disk writes overlap rather than
// take turns (docs/SANDBOX.md has what it gained over HTTP).
// A failed write waits for the read under way to end before it returns, so
// that r is never read after copyOverlapped returns.
func copyOverlapped(w io.Writer, r io.Reader) (n int64, err error) {
	free := make(chan []byte, 2)
	free <- make([]byte, copyBufferBytes)
	free <- make([]byte, copyBufferBytes)
	full := make(chan []byte, 1)
	stop := make(chan struct{})
	var readErr error // set before full is closed
	go func() {
		defer close(full)
		for {
			var buf []byte
			select {
			case <-stop: // checked first: a buffer may be free too
				return
			default:
			}
			select {
			case buf = <-free:
			case <-stop:
				return
			}
			k, err := fill(r, buf)
			if k > 0 {
				select {
				case full <- buf[:k]:
				case <-stop:
					return
				}
			}
			if err != nil {
				if err != io.EOF {
					readErr = err
				}
				return
			}
		}
	}()
	for buf := range full {
		k, err := w.Write(buf)
		n += int64(k)
		if err != nil {
			close(stop)
			for range full {
			}
			return n, err
		}
		free <- buf[:cap(buf)]
	}
	return n, readErr
}

// fill reads r into buf until buf is full or r fails, and returns r's error
// as it is. Unlike io.ReadFull, which reports an end before buf is full as
// io.ErrUnexpectedEOF: a source's own io.ErrUnexpectedEOF (an upload whose
// client went away before its declared end) would look like its plain end.
func fill(r io.Reader, buf []byte) (n int, err error) {
	for n < len(buf) && err == nil {
		var k int
		k, err = r.Read(buf[n:])
		n += k
	}
	return n, err
}

// A Splicer is a source that moves its bytes into a file itself, inside the
// kernel where it can: an upload read straight from its socket, which
// splice(2) moves into the file without a pass through the server's memory.
// SpliceTo moves at most n bytes into f and says how many; at the source's
// end it returns io.EOF. Write reads a Splicer through SpliceTo only.
type Splicer interface {
	io.Reader
	SpliceTo(f *os.File, n int64) (int64, error)
}

// spliceBytes is what spliceAll asks of a Splicer at a time.
const spliceBytes = 1 << 20

// spliceAll moves sp's bytes into f until sp ends or limit bytes have come,
// starting the writeback of what came as writeBehind does.
func spliceAll(f *os.File, sp Splicer, limit int64) (n int64, err error) {
	wb := &writeBehind{f: f}
	for n < limit {
		k, err := sp.SpliceTo(f, min(spliceBytes, limit-n))
		n += k
		wb.advance(k)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// writeBehindBytes is how much an upload writes between two starts of the
// writeback of what it wrote.
const writeBehindBytes = 8 << 20

// writeBehind starts the kernel's writeback of each writeBehindBytes as soon
// as they are written (sync_file_range without waiting), so that the disk
// works while the rest arrives and the fsync before the rename has little
// left to wait for.
type writeBehind struct {
	f            *os.File
	off, flushed int64
}

func (w *writeBehind) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.advance(int64(n))
	return n, err
}

// advance counts n more bytes written to w.f, and starts the writeback of
// the unflushed ones once they are writeBehindBytes.
func (w *writeBehind) advance(n int64) {
	w.off += n
	if w.off-w.flushed >= writeBehindBytes {
		// Only a hint: the fsync that follows is what makes it durable.
		_ = unix.SyncFileRange(int(w.f.Fd()), w.flushed, w.off-w.flushed, unix.SYNC_FILE_RANGE_WRITE)
		w.flushed = w.off
	}
}

// check applies o's preconditions to the entry as it is.
func (o WriteOptions) check(path string, old rawStat, exists bool) error {
	switch {
	case exists && old.mode&unix.S_IFMT == unix.S_IFDIR:
		return fail(ErrIsDirectory, path)
	case exists && o.source != nil && old.dev == o.source.dev && old.ino == o.source.ino:
		// Before MustNotExist: overwrite would not do either.
		return fail(ErrSameFile, path)
	case exists && o.MustNotExist:
		return fail(ErrExists, path)
	case exists && old.mode&unix.S_IFMT != unix.S_IFREG:
		// A FIFO, a socket or a device: a write wants a file where it
		// writes, and replacing one would take it from the program that
		// reads the FIFO or listens on the socket.
		return fail(ErrNotRegular, path)
	case o.IfMatch != nil && (!exists || !slices.Contains(o.IfMatch, infoOf(path, old).ETag)):
		return fail(ErrPreconditionFailed, path)
	}
	return nil
}

// createTemp makes the temporary file of a write to name in dir: unnamed
// (tmpName "") where the filesystem has O_TMPFILE, so that not even a crash
// leaves it behind; named otherwise.
func (f *FS) createTemp(dir *os.File, name string, mode fs.FileMode) (*os.File, string, error) {
	if !f.noTmpfile {
		fd, err := unix.Openat(int(dir.Fd()), ".", unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, uint32(mode))
		if err == nil {
			// The mode passed to open is masked by the umask.
			if err := unix.Fchmod(fd, uint32(mode)); err != nil {
				unix.Close(fd)
				return nil, "", err
			}
			return os.NewFile(uintptr(fd), name), "", nil
		}
		if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EINVAL) {
			return nil, "", err
		}
	}
	for {
		tmpName := tempName(name)
		fd, err := unix.Openat(int(dir.Fd()), tmpName, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(mode))
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		if err := unix.Fchmod(fd, uint32(mode)); err != nil {
			unix.Close(fd)
			_ = unix.Unlinkat(int(dir.Fd()), tmpName, 0)
			return nil, "", err
		}
		return os.NewFile(uintptr(fd), tmpName), tmpName, nil
	}
}

// linkTemp names the unnamed file tmp in dir. linkat through /proc/self/fd
// needs no privilege, unlike AT_EMPTY_PATH.
func linkTemp(tmp, dir *os.File, name string) (string, error) {
	for {
		tmpName := tempName(name)
		err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(tmp.Fd())), int(dir.Fd()), tmpName, unix.AT_SYMLINK_FOLLOW)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		return tmpName, err
	}
}

// tempName is a hidden name beside name that no one else picks.
func tempName(name string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	prefix := name
	if len(prefix) > 64 {
		prefix = prefix[:64]
	}
	return "." + prefix + "." + hex.EncodeToString(b[:]) + ".tmp"
}

// Copy writes a copy of the regular file src to dst, as Write does with o,
// but that a new file takes src's permission bits (never setuid, setgid or
// sticky), as cp gives them, whatever o.Mode says. A dst that is a
// directory with entries is ErrDestinationNotEmpty, an empty one
// ErrIsDirectory. A dst that is src's file (by another path, as a hard link
// of it, or through a symlink at either end) is ErrSameFile, as cp refuses
// it: the copy would change nothing but the file's inode, and part its hard
// links.
func (f *FS) Copy(src, dst string, o WriteOptions) (Info, error) {
	in, info, err := f.Open(src)
	if err != nil {
		return Info{}, err
	}
	defer in.Close()
	st, err := fstat(in)
	if err != nil {
		return Info{}, classify(err)
	}
	o.source = &st
	o.Mode = info.Mode.Perm()
	out, err := f.Write(dst, in, o)
	if errors.Is(err, ErrIsDirectory) && f.hasEntries(dst) {
		return Info{}, fail(ErrDestinationNotEmpty, dst)
	}
	return out, err
}

// hasEntries reports whether path is a directory with entries.
func (f *FS) hasEntries(path string) bool {
	t, err := f.resolve(path)
	if err != nil {
		return false
	}
	dir, name, err := t.openParent()
	if err != nil {
		return false
	}
	defer dir.Close()
	return hasEntries(dir, name)
}
