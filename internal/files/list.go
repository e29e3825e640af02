package files

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Entry is one entry of a List or Walk page.
type Entry struct {
	Info
	// Rel is the entry's path relative to the listed or walked directory,
	// slash-separated: its name in a List.
	Rel string
}

// Page is one page of entries. Next is the cursor of the following page, or
// empty when there is none; a page may end exactly at the last entry and
// still give a Next, whose page is then empty. A cursor is UTF-8 text that
// names the page's last entry exactly (cursorOf).
type Page struct {
	Entries []Entry
	Next    string
}

// List returns the entries of the directory at dirPath in byte order of their
// names, at most limit of them (0 or more than MaxListEntries means
// MaxListEntries), starting after the name the cursor names ("" for the
// first page; a page's Next). Entries are described as they are: a symlink
// is not followed.
func (f *FS) List(dirPath, cursor string, limit int) (Page, error) {
	after, err := parseCursor(cursor)
	if err == nil && len(after) > 1 {
		err = fail(ErrInvalidCursor, strconv.Quote(cursor)+" names a path, and a list's cursor a name")
	}
	if err != nil {
		return Page{}, err
	}
	dir, abs, err := f.openDir(dirPath)
	if err != nil {
		return Page{}, err
	}
	defer dir.Close()
	if limit <= 0 || limit > f.opts.MaxListEntries {
		limit = f.opts.MaxListEntries
	}
	names, err := sortedNames(dir)
	if err != nil {
		return Page{}, err
	}
	start := 0
	if len(after) == 1 {
		start, _ = slices.BinarySearch(names, after[0])
		if start < len(names) && names[start] == after[0] {
			start++
		}
	}
	var page Page
	for _, name := range names[start:] {
		if len(page.Entries) == limit {
			page.Next = cursorOf([]string{page.Entries[len(page.Entries)-1].Rel})
			break
		}
		st, ok, err := lstatAt(dir, name)
		if err != nil {
			return Page{}, err
		}
		if !ok {
			continue // removed since it was read
		}
		page.Entries = append(page.Entries, Entry{Info: infoOf(path.Join(abs, name), st), Rel: name})
	}
	return page, nil
}

// WalkOptions bound a Walk page.
type WalkOptions struct {
	// Cursor is the Next of the previous page; "" starts the walk.
	Cursor string
	// Limit bounds the entries of the page; 0 or more than MaxListEntries
	// means MaxListEntries.
	Limit int
	// MaxDepth bounds how deep the walk goes: 1 is the directory's own
	// entries. 0 or more than MaxWalkDepth means MaxWalkDepth.
	MaxDepth int
}

// Walk returns a page of the tree beneath the directory at dirPath, depth first,
// each directory's entries in byte order of their names and each directory
// before its entries, so that the order is the same on every call and a
// cursor resumes where the previous page ended. Symlinks are entries and are
// never followed: a walk never leaves the tree, even where a symlink points.
func (f *FS) Walk(dirPath string, o WalkOptions) (Page, error) {
	dir, abs, err := f.openDir(dirPath)
	if err != nil {
		return Page{}, err
	}
	defer dir.Close()
	w := walker{abs: abs, limit: o.Limit, maxDepth: o.MaxDepth}
	if w.limit <= 0 || w.limit > f.opts.MaxListEntries {
		w.limit = f.opts.MaxListEntries
	}
	if w.maxDepth <= 0 || w.maxDepth > f.opts.MaxWalkDepth {
		w.maxDepth = f.opts.MaxWalkDepth
	}
	if w.cursor, err = parseCursor(o.Cursor); err != nil {
		return Page{}, err
	}
	if err := w.dir(dir, nil); err != nil && !errors.Is(err, errPageFull) {
		return Page{}, err
	}
	return w.page, nil
}

var errPageFull = errors.New("page full")

type walker struct {
	abs             string
	limit, maxDepth int
	cursor          []string // the components of the last entry already returned
	page            Page
}

// dir adds the entries beneath dir, whose path is prefix.
func (w *walker) dir(dir *os.File, prefix []string) error {
	names, err := sortedNames(dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		p := append(slices.Clip(prefix), name)
		order := compareTo(p, w.cursor)
		if order == before {
			continue // it and its whole subtree came before the cursor
		}
		st, ok, err := lstatAt(dir, name)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		rel := strings.Join(p, "/")
		if order == after {
			if len(w.page.Entries) == w.limit {
				w.page.Next = cursorOf(strings.Split(w.page.Entries[len(w.page.Entries)-1].Rel, "/"))
				return errPageFull
			}
			w.page.Entries = append(w.page.Entries, Entry{Info: infoOf(path.Join(w.abs, rel), st), Rel: rel})
		}
		if st.mode&unix.S_IFMT != unix.S_IFDIR || len(p) >= w.maxDepth {
			continue
		}
		// O_NOFOLLOW and a name read from the directory: the walk goes down
		// only, into what is there now, even if name was swapped for a
		// symlink since it was stat'ed.
		fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
				continue
			}
			return classify(err)
		}
		sub := os.NewFile(uintptr(fd), rel)
		err = w.dir(sub, p)
		sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

type order int

const (
	before   order = iota // at or before the cursor, and so is its subtree
	ancestor              // at the cursor or an ancestor of it: its subtree goes on
	after                 // after the cursor: not yet returned
)

// compareTo places p in walk order against the cursor.
func compareTo(p, cursor []string) order {
	if cursor == nil {
		return after
	}
	for i := range min(len(p), len(cursor)) {
		if c := strings.Compare(p[i], cursor[i]); c != 0 {
			if c < 0 {
				return before
			}
			return after
		}
	}
	if len(p) <= len(cursor) {
		return ancestor
	}
	return after // a descendant of the cursor
}

// A cursor names the last entry a page gave, as text that a client sends
// back through JSON and a URL, which both want UTF-8: its path relative to
// the listed or walked directory, names joined by "/". A name that is UTF-8,
// as nearly every one is, is written as it is, so that a list's cursor is
// the name itself. A name that is not (Linux takes any bytes but "/" and
// NUL) is written as an empty name, which no real one is, and its bytes in
// unpadded base64url: "bad\xffname" is "/YmFk_25hbWU", "d/bad\xffname"
// "d//YmFk_25hbWU". Written as itself it would come back with U+FFFD for its
// invalid bytes, which sorts before them, and its page would start at the
// name again, and again: the cursor keeps every byte, so that each page
// starts after the last one ended, and the pages end.
func cursorOf(names []string) string {
	var b strings.Builder
	for i, name := range names {
		if i > 0 {
			b.WriteByte('/')
		}
		if !utf8.ValidString(name) {
			b.WriteByte('/')
			b.WriteString(base64.RawURLEncoding.EncodeToString([]byte(name)))
			continue
		}
		b.WriteString(name)
	}
	return b.String()
}

// parseCursor returns the names of the path the cursor names, nil for "".
// A cursor that no page gives (an empty name without a base64url one after
// it, or one that decodes to no name) is ErrInvalidCursor.
func parseCursor(cursor string) ([]string, error) {
	if cursor == "" {
		return nil, nil
	}
	parts := strings.Split(cursor, "/")
	names := make([]string, 0, len(parts))
	for i := 0; i < len(parts); i++ {
		name := parts[i]
		if name == "" {
			i++
			if i == len(parts) {
				return nil, fail(ErrInvalidCursor, strconv.Quote(cursor)+" has an empty name")
			}
			b, err := base64.RawURLEncoding.DecodeString(parts[i])
			if err != nil || len(b) == 0 || bytes.ContainsAny(b, "/\x00") {
				return nil, fail(ErrInvalidCursor, strconv.Quote(cursor)+": "+strconv.Quote(parts[i])+" is no name in base64url")
			}
			name = string(b)
		}
		names = append(names, name)
	}
	return names, nil
}

// openDir opens the directory at path beneath its root, with O_DIRECTORY, so
// that anything else (a FIFO, a device) is refused before it is opened.
func (f *FS) openDir(p string) (*os.File, string, error) {
	t, err := f.resolve(p)
	if err != nil {
		return nil, "", err
	}
	dir, err := t.root.r.OpenFile(t.rel, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, "", classify(err)
	}
	return dir, t.abs, nil
}

func sortedNames(dir *os.File) ([]string, error) {
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, classify(err)
	}
	slices.Sort(names)
	return names, nil
}
