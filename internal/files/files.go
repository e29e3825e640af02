package files

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// MaxPathBytes bounds a path, as PATH_MAX does.
const MaxPathBytes = 4096

// Options bound what one operation may do. Zero fields take the defaults.
type Options struct {
	// MaxFileBytes bounds a file written or copied; 0 means 1 GiB.
	MaxFileBytes int64
	// MaxListEntries bounds the entries of one List or Walk page; 0 means 1000.
	MaxListEntries int
	// MaxWalkDepth bounds how deep Walk descends; 0 means 32.
	MaxWalkDepth int
}

func (o Options) withDefaults() Options {
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = 1 << 30
	}
	if o.MaxListEntries <= 0 {
		o.MaxListEntries = 1000
	}
	if o.MaxWalkDepth <= 0 {
		o.MaxWalkDepth = 32
	}
	return o
}

// FS serves the files beneath its roots. It is safe for concurrent use.
type FS struct {
	roots []*root
	opts  Options
	// publish serializes, per destination, a write's last precondition
	// check and its rename, so that of two writes conditioned on one ETag
	// only one lands. Striped: a lock per hash bucket of the entry written
	// (entryKey).
	publish [64]sync.Mutex
	seed    maphash.Seed
	// Test seams: noTmpfile makes writes use a named temporary file from
	// the start, as on a filesystem without O_TMPFILE; beforeRename, when
	// set, runs between a write's last check and its rename;
	// releaseDropped, when set, is given the descriptor of each file an
	// operation dropped (holdDropped) instead of a close in the background.
	noTmpfile      bool
	beforeRename   func()
	releaseDropped func(fd int)
}

type root struct {
	name string // as configured, cleaned
	real string // with symlinks resolved, which a client may use as well
	r    *os.Root
}

// New opens roots, which must be absolute paths of directories. With no root
// the FS answers every path with ErrOutsideRoot.
func New(roots []string, opts Options) (*FS, error) {
	f := &FS{opts: opts.withDefaults(), seed: maphash.MakeSeed()}
	for _, name := range roots {
		if !filepath.IsAbs(name) || strings.ContainsRune(name, 0) {
			f.Close()
			return nil, fmt.Errorf("files root %q: not an absolute path", name)
		}
		name = filepath.Clean(name)
		real, err := filepath.EvalSymlinks(name)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("files root: %w", err)
		}
		r, err := os.OpenRoot(real)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("files root: %w", err)
		}
		f.roots = append(f.roots, &root{name: name, real: real, r: r})
	}
	return f, nil
}

// Close releases the roots.
func (f *FS) Close() error {
	var errs []error
	for _, r := range f.roots {
		errs = append(errs, r.r.Close())
	}
	return errors.Join(errs...)
}

// Roots returns the roots as configured.
func (f *FS) Roots() []string {
	out := make([]string, len(f.roots))
	for i, r := range f.roots {
		out[i] = r.name
	}
	return out
}

// target is a path resolved to its root.
type target struct {
	root *root
	rel  string // relative to the root, slash-separated; "." is the root
	abs  string // the cleaned path as addressed
	// dir is set when the path as addressed ends in "/": it names a
	// directory, as the kernel resolves such a path, which the cleaning
	// (abs, rel) has forgotten.
	dir bool
}

// resolve finds the root of path, the innermost one when roots nest. A path
// that ends in "/" names a directory: when its entry is anything else (a
// file, or a symlink to one), it is ErrNotADirectory here, before any
// operation acts on the entry the cleaned path names; when there is none,
// the operation that would make one decides (target.dir).
func (f *FS) resolve(path string) (target, error) {
	switch {
	case path == "":
		return target{}, fail(ErrInvalidPath, "empty path")
	case len(path) > MaxPathBytes:
		return target{}, fail(ErrInvalidPath, "path too long")
	case strings.ContainsRune(path, 0):
		return target{}, fail(ErrInvalidPath, "path contains NUL")
	case !filepath.IsAbs(path):
		return target{}, fail(ErrInvalidPath, "path is not absolute")
	}
	abs := filepath.Clean(path)
	var (
		best    target
		bestLen = -1
	)
	for _, r := range f.roots {
		for _, prefix := range []string{r.name, r.real} {
			if rel, ok := beneath(prefix, abs); ok && len(prefix) > bestLen {
				best, bestLen = target{root: r, rel: rel, abs: abs}, len(prefix)
			}
		}
	}
	if best.root == nil {
		return target{}, fail(ErrOutsideRoot, "no root contains "+abs)
	}
	if best.dir = strings.HasSuffix(path, "/") && best.rel != "."; best.dir {
		// What cannot be described (none there, a link out) is the
		// operation's to answer.
		if fi, err := best.root.r.Stat(best.rel); err == nil && !fi.IsDir() {
			return target{}, fail(ErrNotADirectory, abs+"/ names a directory")
		}
	}
	return best, nil
}

// beneath returns path relative to prefix when path is prefix or beneath it.
func beneath(prefix, path string) (string, bool) {
	if path == prefix {
		return ".", true
	}
	if prefix == "/" {
		return path[1:], true
	}
	if rest, ok := strings.CutPrefix(path, prefix+"/"); ok {
		return rest, true
	}
	return "", false
}

// Type is the kind of a directory entry.
type Type string

// The entry types.
const (
	TypeFile      Type = "file"
	TypeDirectory Type = "directory"
	TypeSymlink   Type = "symlink"
	TypeOther     Type = "other" // a FIFO, a socket or a device
)

// Info describes a file or a directory entry.
type Info struct {
	// Path is the absolute path, cleaned, as the caller addressed it.
	Path    string
	Type    Type
	Size    int64
	Mode    fs.FileMode // permission bits only
	ModTime time.Time
	// ETag names this version of the entry: its device, inode, size,
	// modification and change times. A write through this package always
	// makes a new inode, so it always changes the ETag; a change in place by
	// another program changes at least ctime, which the kernel keeps to the
	// nanosecond once it has been read (multigrain timestamps, Linux 6.13+);
	// on older kernels two same-size changes within one clock tick (a few
	// ms) can share an ETag. It is opaque, without HTTP's quotes.
	ETag string
}

// rawStat is what an Info is made of, from unix.Stat_t or syscall.Stat_t.
type rawStat struct {
	dev, ino     uint64
	size         int64
	mode         uint32
	mtime, ctime int64 // nanoseconds
}

func fromUnix(st *unix.Stat_t) rawStat {
	return rawStat{uint64(st.Dev), st.Ino, st.Size, st.Mode, st.Mtim.Nano(), st.Ctim.Nano()}
}

func infoOf(path string, st rawStat) Info {
	in := Info{
		Path:    path,
		Size:    st.size,
		Mode:    fs.FileMode(st.mode & 0o7777),
		ModTime: time.Unix(0, st.mtime),
		ETag:    fmt.Sprintf("%x-%x-%x-%x-%x", st.dev, st.ino, st.size, st.mtime, st.ctime),
	}
	switch st.mode & unix.S_IFMT {
	case unix.S_IFREG:
		in.Type = TypeFile
	case unix.S_IFDIR:
		in.Type = TypeDirectory
	case unix.S_IFLNK:
		in.Type = TypeSymlink
	default:
		in.Type = TypeOther
	}
	return in
}

func fstat(file *os.File) (rawStat, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(file.Fd()), &st); err != nil {
		return rawStat{}, err
	}
	return fromUnix(&st), nil
}

// Stat describes path, following symlinks that stay inside its root.
func (f *FS) Stat(path string) (Info, error) {
	t, err := f.resolve(path)
	if err != nil {
		return Info{}, err
	}
	return t.stat()
}

// stat describes t's entry, following symlinks that stay inside its root,
// without opening it.
func (t target) stat() (Info, error) {
	fi, err := t.root.r.Stat(t.rel)
	if err != nil {
		return Info{}, classify(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return infoOf(t.abs, rawStat{st.Dev, st.Ino, st.Size, st.Mode, st.Mtim.Nano(), st.Ctim.Nano()}), nil
}

// Open opens the regular file at path for reading and describes it; the
// caller closes it. The *os.File is an io.ReadSeeker and an io.ReaderAt, for
// ranged reads; the Info describes what it reads.
func (f *FS) Open(path string) (*os.File, Info, error) {
	t, err := f.resolve(path)
	if err != nil {
		return nil, Info{}, err
	}
	// Described first, so that a FIFO, a socket or a device is never
	// opened: its open could block (a FIFO without a writer) or act (a
	// device's driver).
	in, err := t.stat()
	if err == nil {
		err = mustBeFile(in)
	}
	if err != nil {
		return nil, Info{}, err
	}
	// O_NONBLOCK and O_NOCTTY: should the entry be swapped for a FIFO or a
	// terminal since, its open neither waits for a writer nor takes a
	// terminal; what was opened is checked again below.
	file, err := t.root.r.OpenFile(t.rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, Info{}, classify(err)
	}
	st, err := fstat(file)
	if err != nil {
		file.Close()
		return nil, Info{}, classify(err)
	}
	in = infoOf(t.abs, st)
	if err := mustBeFile(in); err != nil {
		file.Close()
		return nil, Info{}, err
	}
	return file, in, nil
}

// mustBeFile is nil when in is a regular file, ErrIsDirectory when it is a
// directory, and ErrNotRegular for anything else.
func mustBeFile(in Info) error {
	switch in.Type {
	case TypeFile:
		return nil
	case TypeDirectory:
		return fail(ErrIsDirectory, in.Path)
	default:
		return fail(ErrNotRegular, in.Path)
	}
}

// openParent opens the directory that holds t's entry, beneath t's root, and
// returns it with the entry's name.
func (t target) openParent() (*os.File, string, error) {
	if t.rel == "." {
		return nil, "", fail(ErrIsRoot, t.abs)
	}
	return t.root.openParentOf(t.rel)
}

// openParentOf opens the directory that holds the entry rel beneath r, and
// returns it with the entry's name. rel is split at its last slash and not
// cleaned: os.Root resolves what comes before as the kernel would, a ".."
// after a symlink included. The directory is opened with O_DIRECTORY, so
// that anything else (a FIFO, a device) is refused before it is opened.
func (r *root) openParentOf(rel string) (*os.File, string, error) {
	dirRel, name := ".", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		dirRel, name = rel[:i], rel[i+1:]
	}
	dir, err := r.r.OpenFile(dirRel, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, "", classify(err)
	}
	return dir, name, nil
}

// lstatAt describes the entry name in dir without following it; ok is false
// when there is none.
func lstatAt(dir *os.File, name string) (st rawStat, ok bool, err error) {
	var u unix.Stat_t
	err = unix.Fstatat(int(dir.Fd()), name, &u, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return rawStat{}, false, nil
	}
	if err != nil {
		return rawStat{}, false, classify(err)
	}
	return fromUnix(&u), true, nil
}
