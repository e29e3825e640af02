package files

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
)

func TestNew(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	writeFile(t, file, "")
	for _, roots := range [][]string{{"relative"}, {dir, file}, {filepath.Join(dir, "missing")}, {"/a\x00b"}} {
		if f, err := New(roots, Options{}); err == nil {
			f.Close()
			t.Errorf("New(%q) = nil error, want one", roots)
		}
	}
	f, err := New(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Stat(dir)
	wantErr(t, "Stat with no root", err, ErrOutsideRoot)
}

func TestOpenAndStat(t *testing.T) {
	fx := newFixture(t, Options{})
	writeFile(t, fx.in("dir/file.txt"), "0123456789")
	if err := os.Symlink("dir/file.txt", fx.in("link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fx.in("fifo"), 0o644); err != nil {
		t.Fatal(err)
	}

	file, in, err := fx.fs.Open(fx.in("dir/../dir/file.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if in.Path != fx.in("dir/file.txt") || in.Type != TypeFile || in.Size != 10 || in.Mode != 0o644 || in.ETag == "" {
		t.Errorf("Open info = %+v", in)
	}
	// Ranged reads: ReadAt, and Seek then Read.
	buf := make([]byte, 4)
	if n, err := file.ReadAt(buf, 3); n != 4 || err != nil || string(buf) != "3456" {
		t.Errorf("ReadAt(4 bytes, 3) = %d, %v, %q; want 3456", n, err, buf)
	}
	if _, err := file.Seek(8, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if rest, err := io.ReadAll(file); err != nil || string(rest) != "89" {
		t.Errorf("read after Seek(8) = %q, %v; want 89", rest, err)
	}

	st, err := fx.fs.Stat(fx.in("link"))
	if err != nil || st.Type != TypeFile || st.ETag != in.ETag {
		t.Errorf("Stat(link) = %+v, %v; want the file it links to, ETag %s", st, err, in.ETag)
	}
	if st, err := fx.fs.Stat(fx.root); err != nil || st.Type != TypeDirectory {
		t.Errorf("Stat(root) = %+v, %v; want a directory", st, err)
	}

	tests := []struct {
		path string
		want error
	}{
		{fx.in("dir"), ErrIsDirectory},
		{fx.root, ErrIsDirectory},
		{fx.in("fifo"), ErrNotRegular},
		{fx.in("missing"), ErrNotFound},
		{fx.in("dir/file.txt/x"), ErrNotADirectory},
		{"relative/path", ErrInvalidPath},
		{"", ErrInvalidPath},
		{"/" + strings.Repeat("a", MaxPathBytes), ErrInvalidPath},
	}
	for _, tt := range tests {
		f, _, err := fx.fs.Open(tt.path)
		if err == nil {
			f.Close()
		}
		wantErr(t, "Open("+tt.path+")", err, tt.want)
	}
	_, err = fx.fs.Stat(fx.in("fifo"))
	wantErr(t, "Stat(fifo)", err, nil)
}

func TestWrite(t *testing.T) {
	for _, named := range []bool{false, true} {
		t.Run(map[bool]string{false: "tmpfile", true: "named temp"}[named], func(t *testing.T) {
			fx := newFixture(t, Options{MaxFileBytes: 100})
			fx.fs.noTmpfile = named
			path := fx.in("f")
			in, err := fx.fs.Write(path, strings.NewReader("first"), WriteOptions{Mode: 0o600})
			if err != nil || in.Size != 5 || in.Mode != 0o600 {
				t.Fatalf("Write(new) = %+v, %v", in, err)
			}
			// A replaced file keeps its mode.
			in2, err := fx.fs.Write(path, strings.NewReader("second"), WriteOptions{IfMatch: []string{in.ETag}, Mode: 0o644})
			if err != nil || in2.Mode != 0o600 || in2.ETag == in.ETag {
				t.Fatalf("Write(replace) = %+v, %v", in2, err)
			}
			if got := readFile(t, path); got != "second" {
				t.Errorf("content = %q, want second", got)
			}
			st, _ := fx.fs.Stat(path)
			if st.ETag != in2.ETag {
				t.Errorf("Stat's ETag %s differs from Write's %s", st.ETag, in2.ETag)
			}

			failing := []struct {
				name string
				r    io.Reader
				o    WriteOptions
				want error
			}{
				{"stale ETag", strings.NewReader("x"), WriteOptions{IfMatch: []string{in.ETag}}, ErrPreconditionFailed},
				{"stale ETags", strings.NewReader("x"), WriteOptions{IfMatch: []string{"other", in.ETag}}, ErrPreconditionFailed},
				{"no ETag to match", strings.NewReader("x"), WriteOptions{IfMatch: []string{}}, ErrPreconditionFailed},
				{"must not exist", strings.NewReader("x"), WriteOptions{MustNotExist: true}, ErrExists},
				{"too large", strings.NewReader(strings.Repeat("x", 101)), WriteOptions{}, ErrTooLarge},
				{"cut short", io.MultiReader(strings.NewReader("partial"), errReader{}), WriteOptions{}, errCut},
				{"ended before its declared end", io.MultiReader(strings.NewReader("partial"), iotest.ErrReader(io.ErrUnexpectedEOF)), WriteOptions{}, ErrCutShort},
			}
			for _, tt := range failing {
				_, err := fx.fs.Write(path, tt.r, tt.o)
				wantErr(t, "Write("+tt.name+")", err, tt.want)
				if got := readFile(t, path); got != "second" {
					t.Errorf("after Write(%s) content = %q, want the old one", tt.name, got)
				}
			}
			if got := names(t, fx.root); !slices.Equal(got, []string{"f"}) {
				t.Errorf("root holds %q after the writes, want only f", got)
			}
			// Any one ETag of the list matching is enough.
			in3, err := fx.fs.Write(path, strings.NewReader("third"), WriteOptions{IfMatch: []string{"other", in2.ETag, in.ETag}})
			if err != nil || readFile(t, path) != "third" {
				t.Fatalf("Write(If-Match a list holding the current ETag) = %+v, %v", in3, err)
			}
			in2 = in3
			// Exactly the limit is allowed.
			if _, err := fx.fs.Write(path, strings.NewReader(strings.Repeat("x", 100)), WriteOptions{}); err != nil {
				t.Errorf("Write(100 bytes, limit 100) = %v", err)
			}

			_, err = fx.fs.Write(fx.in("missing/f"), strings.NewReader("x"), WriteOptions{})
			wantErr(t, "Write(missing parent)", err, ErrNotFound)
			_, err = fx.fs.Write(fx.in("f/g"), strings.NewReader("x"), WriteOptions{})
			wantErr(t, "Write(parent is a file)", err, ErrNotADirectory)
			_, err = fx.fs.Write(fx.root, strings.NewReader("x"), WriteOptions{})
			wantErr(t, "Write(root)", err, ErrIsDirectory)
			if err := os.Mkdir(fx.in("d"), 0o755); err != nil {
				t.Fatal(err)
			}
			_, err = fx.fs.Write(fx.in("d"), strings.NewReader("x"), WriteOptions{})
			wantErr(t, "Write(directory)", err, ErrIsDirectory)
			_, err = fx.fs.Write(fx.in("new"), strings.NewReader("x"), WriteOptions{IfMatch: []string{in2.ETag}})
			wantErr(t, "Write(IfMatch on a missing file)", err, ErrPreconditionFailed)
		})
	}
}

var errCut = errors.New("upload cut short")

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errCut }

func TestMkdirRemoveMoveCopy(t *testing.T) {
	fx := newFixture(t, Options{})
	wantErr(t, "Mkdir(a/b/c)", fx.fs.Mkdir(fx.in("a/b/c")), nil)
	wantErr(t, "Mkdir(a/b/c) again", fx.fs.Mkdir(fx.in("a/b/c")), nil)
	wantErr(t, "Mkdir(root)", fx.fs.Mkdir(fx.root), nil)
	writeFile(t, fx.in("a/file"), "content")
	wantErr(t, "Mkdir(over a file)", fx.fs.Mkdir(fx.in("a/file")), ErrNotADirectory)
	wantErr(t, "Mkdir(beneath a file)", fx.fs.Mkdir(fx.in("a/file/x")), ErrNotADirectory)

	if _, err := fx.fs.Copy(fx.in("a/file"), fx.in("a/b/copy"), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, fx.in("a/b/copy")); got != "content" {
		t.Errorf("copy = %q", got)
	}
	_, err := fx.fs.Copy(fx.in("a/file"), fx.in("a/b/copy"), WriteOptions{MustNotExist: true})
	wantErr(t, "Copy(onto an existing file, must not exist)", err, ErrExists)
	_, err = fx.fs.Copy(fx.in("a"), fx.in("a2"), WriteOptions{})
	wantErr(t, "Copy(a directory)", err, ErrIsDirectory)

	wantErr(t, "Move(onto existing)", fx.fs.Move(fx.in("a/file"), fx.in("a/b/copy"), false), ErrExists)
	wantErr(t, "Move(overwrite)", fx.fs.Move(fx.in("a/file"), fx.in("a/b/copy"), true), nil)
	if _, err := os.Stat(fx.in("a/file")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("moved file still at its source: %v", err)
	}
	wantErr(t, "Move(dir)", fx.fs.Move(fx.in("a/b"), fx.in("moved"), false), nil)
	wantErr(t, "Move(missing)", fx.fs.Move(fx.in("nothing"), fx.in("x"), false), ErrNotFound)
	wantErr(t, "Move(root)", fx.fs.Move(fx.root, fx.in("x"), false), ErrIsRoot)
	wantErr(t, "Move(onto root)", fx.fs.Move(fx.in("moved"), fx.root, true), ErrIsRoot)

	wantErr(t, "Remove(non-empty dir)", fx.fs.Remove(fx.in("moved"), false), ErrNotEmpty)
	wantErr(t, "Remove(file)", fx.fs.Remove(fx.in("moved/copy"), false), nil)
	wantErr(t, "Remove(missing)", fx.fs.Remove(fx.in("moved/copy"), false), ErrNotFound)
	wantErr(t, "Remove(tree)", fx.fs.Remove(fx.in("a"), true), nil)
	wantErr(t, "Remove(root)", fx.fs.Remove(fx.root, true), ErrIsRoot)
	if got := names(t, fx.root); !slices.Equal(got, []string{"moved"}) {
		t.Errorf("root holds %q, want [moved]", got)
	}
	wantErr(t, "Remove(empty dir)", fx.fs.Remove(fx.in("moved/c"), false), nil)
}

// Paths are matched to the innermost root, under its configured name or the
// one its symlinks resolve to.
func TestRoots(t *testing.T) {
	base := t.TempDir()
	outer, inner := filepath.Join(base, "outer"), filepath.Join(base, "outer", "inner")
	writeFile(t, filepath.Join(inner, "f"), "x")
	if err := os.Symlink(outer, filepath.Join(base, "alias")); err != nil {
		t.Fatal(err)
	}
	fs, err := New([]string{filepath.Join(base, "alias"), inner}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	for _, p := range []string{filepath.Join(inner, "f"), filepath.Join(base, "alias", "inner", "f"), filepath.Join(outer, "inner", "f")} {
		if _, err := fs.Stat(p); err != nil {
			t.Errorf("Stat(%s) = %v", p, err)
		}
	}
	_, err = fs.Stat(base + "/outerx")
	wantErr(t, "Stat(a sibling sharing the root's prefix)", err, ErrOutsideRoot)
	if got := fs.Roots(); !slices.Equal(got, []string{filepath.Join(base, "alias"), inner}) {
		t.Errorf("Roots() = %q", got)
	}
}

func TestWriteStreamsLargeFile(t *testing.T) {
	fx := newFixture(t, Options{MaxFileBytes: 300 << 20})
	const size = 200 << 20
	before := memory(t)
	in, err := fx.fs.Write(fx.in("big"), io.LimitReader(pattern{}, size), WriteOptions{})
	if err != nil || in.Size != size {
		t.Fatalf("Write(200 MB) = %+v, %v", in, err)
	}
	after := memory(t)
	t.Logf("200 MB write: heap allocated %d KiB, RSS %d KiB -> %d KiB (peak %d KiB)",
		(after.allocated-before.allocated)>>10, before.rss>>10, after.rss>>10, after.peak>>10)
	// The write holds one copy buffer, not the file.
	if grew := after.allocated - before.allocated; grew > 8<<20 {
		t.Errorf("a 200 MB write allocated %d bytes, want at most 8 MiB", grew)
	}
	// Compared, not subtracted: the RSS may shrink, and the counts are unsigned.
	if after.rss > before.rss+32<<20 {
		t.Errorf("a 200 MB write grew the RSS by %d bytes, want at most 32 MiB", after.rss-before.rss)
	}
	file, _, err := fx.fs.Open(fx.in("big"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if ok, err := sameContent(file, io.LimitReader(pattern{}, size)); !ok || err != nil {
		t.Errorf("the written file differs from what was sent (%v)", err)
	}
}

// pattern yields an endless byte pattern without holding it.
type pattern struct{}

func (pattern) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(i * 7)
	}
	return len(p), nil
}

func sameContent(a, b io.Reader) (bool, error) {
	bufA, bufB := make([]byte, 1<<20), make([]byte, 1<<20)
	for {
		n, errA := io.ReadFull(a, bufA)
		m, errB := io.ReadFull(b, bufB)
		if !bytes.Equal(bufA[:n], bufB[:m]) {
			return false, nil
		}
		if errA == io.EOF || errA == io.ErrUnexpectedEOF {
			return errB == errA, nil
		}
		if errA != nil || errB != nil {
			return false, errors.Join(errA, errB)
		}
	}
}

// splicer is a Splicer over a reader, as an upload's socket would be, that
// moves at most max bytes a call and fails with fail once its reader ends.
type splicer struct {
	r    io.Reader
	max  int64
	fail error
}

func (s *splicer) Read(p []byte) (int, error) { panic("Write reads a Splicer through SpliceTo") }

func (s *splicer) SpliceTo(f *os.File, n int64) (int64, error) {
	k, err := io.Copy(f, io.LimitReader(s.r, min(n, s.max)))
	if err == nil && k == 0 {
		if s.fail != nil {
			return 0, s.fail
		}
		return 0, io.EOF
	}
	return k, err
}

// TestWriteFromSplicer: a Splicer's bytes land whole and in order however it
// cuts them; one beyond MaxFileBytes or one that fails leaves the old file.
func TestWriteFromSplicer(t *testing.T) {
	fx := newFixture(t, Options{MaxFileBytes: 5 << 20})
	data := make([]byte, 4<<20+7)
	for i := range data {
		data[i] = byte(i * 7)
	}
	in, err := fx.fs.Write(fx.in("f"), &splicer{r: bytes.NewReader(data), max: 300_001}, WriteOptions{})
	if got, _ := os.ReadFile(fx.in("f")); err != nil || in.Size != int64(len(data)) || !bytes.Equal(got, data) {
		t.Fatalf("Write from a Splicer = %+v, %v; the file has %d bytes, want %d, the same", in, err, len(got), len(data))
	}
	big := io.MultiReader(bytes.NewReader(data), bytes.NewReader(data))
	if _, err := fx.fs.Write(fx.in("f"), &splicer{r: big, max: 1 << 20}, WriteOptions{}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Write of 8 MiB from a Splicer with a 5 MiB bound = %v, want ErrTooLarge", err)
	}
	cut := errors.New("client gone")
	if _, err := fx.fs.Write(fx.in("f"), &splicer{r: bytes.NewReader(data[:1000]), max: 1 << 20, fail: cut}, WriteOptions{}); !errors.Is(err, cut) {
		t.Errorf("Write from a failing Splicer = %v, want its error", err)
	}
	short := &splicer{r: bytes.NewReader(data[:2<<20]), max: 1 << 20, fail: io.ErrUnexpectedEOF}
	if _, err := fx.fs.Write(fx.in("f"), short, WriteOptions{}); !errors.Is(err, ErrCutShort) {
		t.Errorf("Write from a Splicer that ends before its declared end = %v, want ErrCutShort", err)
	}
	if got, _ := os.ReadFile(fx.in("f")); !bytes.Equal(got, data) {
		t.Errorf("a refused write changed the file (%d bytes)", len(got))
	}
}

// TestWriteThroughSymlink: a write to a symlink writes the file it names,
// resolved beneath the root as a read resolves it (".." after a symlinked
// directory included): the link stays, the file keeps its mode, and If-Match
// takes the ETag that Stat gives for the link's path. A copy onto a symlink
// does the same. A link that leads outside, or is absolute, is refused as
// Open refuses it.
func TestWriteThroughSymlink(t *testing.T) {
	fx := newFixture(t, Options{})
	writeFile(t, fx.in("deep/er/g"), "source")
	writeFile(t, fx.in("deep/f"), "old")
	if err := os.Chmod(fx.in("deep/f"), 0o640); err != nil {
		t.Fatal(err)
	}
	writeFile(t, fx.in("f"), "not this one")
	links := map[string]string{
		"s":          "deep/er",
		"deep/er/up": "../f", // read through s, s/up is deep/f
		"chain":      "s/up",
		"dangling":   "deep/new",
		"dir":        "deep",
		"loop":       "loop",
		"out":        "../outside/f",
		"abs":        fx.in("deep/f"),
	}
	for name, target := range links {
		if err := os.Symlink(target, fx.in(name)); err != nil {
			t.Fatal(err)
		}
	}
	isLink := func(name string) {
		t.Helper()
		if fi, err := os.Lstat(fx.in(name)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a symlink (%v)", name, err)
		}
	}
	for _, name := range []string{"s/up", "chain"} {
		st, err := fx.fs.Stat(fx.in(name))
		if err != nil {
			t.Fatal(err)
		}
		in, err := fx.fs.Write(fx.in(name), strings.NewReader("via "+name), WriteOptions{IfMatch: []string{st.ETag}})
		if err != nil || in.Mode != 0o640 {
			t.Fatalf("Write(%s, If-Match its Stat) = %+v, %v; want the linked file's mode 0640", name, in, err)
		}
		if got := readFile(t, fx.in("deep/f")); got != "via "+name {
			t.Errorf("after Write(%s) deep/f = %q", name, got)
		}
		if after, _ := fx.fs.Stat(fx.in(name)); after.ETag != in.ETag {
			t.Errorf("Stat(%s) after the write has ETag %s, Write gave %s", name, after.ETag, in.ETag)
		}
		_, err = fx.fs.Write(fx.in(name), strings.NewReader("stale"), WriteOptions{IfMatch: []string{st.ETag}})
		wantErr(t, "Write("+name+", a stale If-Match)", err, ErrPreconditionFailed)
	}
	isLink("s/up")
	isLink("chain")
	if got := readFile(t, fx.in("f")); got != "not this one" {
		t.Errorf("f = %q: the link's .. was taken lexically", got)
	}

	if _, err := fx.fs.Copy(fx.in("deep/er/g"), fx.in("chain"), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	isLink("chain")
	if got := readFile(t, fx.in("deep/f")); got != "source" {
		t.Errorf("after a copy onto chain deep/f = %q, want source", got)
	}
	_, err := fx.fs.Copy(fx.in("deep/er/g"), fx.in("chain"), WriteOptions{MustNotExist: true})
	wantErr(t, "Copy(onto a link to a file, must not exist)", err, ErrExists)

	if _, err := fx.fs.Write(fx.in("dangling"), strings.NewReader("made"), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	isLink("dangling")
	if got := readFile(t, fx.in("deep/new")); got != "made" {
		t.Errorf("a write through a dangling link made deep/new = %q", got)
	}

	refused := []struct {
		name string
		want error
	}{
		{"dir", ErrIsDirectory},
		{"loop", ErrNotFound},
		{"out", ErrOutsideRoot},
		{"abs", ErrOutsideRoot},
	}
	for _, tt := range refused {
		_, err := fx.fs.Write(fx.in(tt.name), strings.NewReader("x"), WriteOptions{})
		wantErr(t, "Write("+tt.name+")", err, tt.want)
		isLink(tt.name)
	}
	if got := names(t, fx.outside); len(got) != 0 {
		t.Errorf("outside holds %q, want nothing", got)
	}
}

// TestModes: a write keeps the permission bits of the file it replaces, and
// a copy gives a new file the source's, as cp does; neither ever sets
// setuid, setgid or sticky.
func TestModes(t *testing.T) {
	fx := newFixture(t, Options{})
	for name, mode := range map[string]os.FileMode{"private": 0o600, "script": 0o700, "setuid": 0o755 | os.ModeSetuid | os.ModeSetgid | os.ModeSticky} {
		writeFile(t, fx.in(name), name)
		if err := os.Chmod(fx.in(name), mode); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		do   func() (Info, error)
		want os.FileMode
	}{
		{"copy of a 0600 file", func() (Info, error) { return fx.fs.Copy(fx.in("private"), fx.in("c1"), WriteOptions{}) }, 0o600},
		{"copy of a 0700 script", func() (Info, error) { return fx.fs.Copy(fx.in("script"), fx.in("c2"), WriteOptions{}) }, 0o700},
		{"copy of a setuid file", func() (Info, error) { return fx.fs.Copy(fx.in("setuid"), fx.in("c3"), WriteOptions{}) }, 0o755},
		{"copy over a 0600 file", func() (Info, error) { return fx.fs.Copy(fx.in("script"), fx.in("private"), WriteOptions{}) }, 0o600},
		{"write over a setuid file", func() (Info, error) {
			return fx.fs.Write(fx.in("setuid"), strings.NewReader("x"), WriteOptions{})
		}, 0o755},
	}
	for _, tt := range tests {
		in, err := tt.do()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		fi, err := os.Stat(in.Path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode() &^ os.ModeType; got != tt.want || in.Mode != tt.want {
			t.Errorf("%s: mode %v (Info %v), want %v", tt.name, got, in.Mode, tt.want)
		}
	}
}

// TestNestedRootKept: a root is never removed or moved, nor replaced, not
// even as part of a directory of an outer root that holds it, however the
// path reaches it.
func TestNestedRootKept(t *testing.T) {
	base := t.TempDir()
	outer := filepath.Join(base, "outer")
	inner := filepath.Join(outer, "b", "inner")
	for _, dir := range []string{inner, filepath.Join(outer, "empty"), filepath.Join(outer, "x")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Through self, the inner root is a path of the outer one.
	if err := os.Symlink(".", filepath.Join(outer, "self")); err != nil {
		t.Fatal(err)
	}
	fs, err := New([]string{outer, inner}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	via := filepath.Join(outer, "self", "b", "inner")
	refused := []struct {
		name string
		err  error
	}{
		{"Remove(the parent of a root, recursive)", fs.Remove(filepath.Join(outer, "b"), true)},
		{"Remove(a root through a symlink)", fs.Remove(via, false)},
		{"Remove(a root through a symlink, recursive)", fs.Remove(via, true)},
		{"Move(the parent of a root)", fs.Move(filepath.Join(outer, "b"), filepath.Join(outer, "c"), false)},
		{"Move(a root through a symlink)", fs.Move(via, filepath.Join(outer, "c"), false)},
		{"Move(over a root through a symlink)", fs.Move(filepath.Join(outer, "empty"), via, true)},
	}
	for _, tt := range refused {
		wantErr(t, tt.name, tt.err, ErrIsRoot)
	}
	if st, err := fs.Stat(inner); err != nil || st.Type != TypeDirectory {
		t.Errorf("the inner root after the refusals: %+v, %v", st, err)
	}
	wantErr(t, "Move(a directory beside the root)", fs.Move(filepath.Join(outer, "x"), filepath.Join(outer, "y"), false), nil)
	wantErr(t, "Remove(a directory beside the root)", fs.Remove(filepath.Join(outer, "y"), true), nil)
}

// TestBadNamesAndMoves: a name longer than the filesystem takes is
// ErrInvalidPath on every operation, and a directory moved beneath itself
// ErrMoveIntoItself.
func TestBadNamesAndMoves(t *testing.T) {
	fx := newFixture(t, Options{})
	writeFile(t, fx.in("f"), "x")
	writeFile(t, fx.in("a/b/c"), "x")
	for _, long := range []string{fx.in(strings.Repeat("n", 256)), fx.in(strings.Repeat("n", 256) + "/x")} {
		ops := map[string]func() error{
			"Open": func() error {
				file, _, err := fx.fs.Open(long)
				if err == nil {
					file.Close()
				}
				return err
			},
			"Stat":      func() error { _, err := fx.fs.Stat(long); return err },
			"List":      func() error { _, err := fx.fs.List(long, "", 0); return err },
			"Walk":      func() error { _, err := fx.fs.Walk(long, WalkOptions{}); return err },
			"Write":     func() error { _, err := fx.fs.Write(long, strings.NewReader("x"), WriteOptions{}); return err },
			"Mkdir":     func() error { return fx.fs.Mkdir(long) },
			"Remove":    func() error { return fx.fs.Remove(long, true) },
			"Copy from": func() error { _, err := fx.fs.Copy(long, fx.in("g"), WriteOptions{}); return err },
			"Copy to":   func() error { _, err := fx.fs.Copy(fx.in("f"), long, WriteOptions{}); return err },
			"Move from": func() error { return fx.fs.Move(long, fx.in("g"), false) },
			"Move to":   func() error { return fx.fs.Move(fx.in("f"), long, false) },
		}
		for name, op := range ops {
			wantErr(t, name+"(a name of 256 bytes)", op(), ErrInvalidPath)
		}
	}
	wantErr(t, "Move(a directory into itself)", fx.fs.Move(fx.in("a"), fx.in("a/b/a"), false), ErrMoveIntoItself)
	if got := readFile(t, fx.in("a/b/c")); got != "x" {
		t.Errorf("a/b/c = %q after the refused move", got)
	}
}

// TestOntoADirectoryWithEntries: a move or a copy onto a directory that has
// entries, even with overwrite, is ErrDestinationNotEmpty (not ErrExists,
// which overwrite answers, nor ErrIsDirectory, which its removal would not
// change), and changes nothing; onto an empty directory a directory moves,
// and a file is ErrIsDirectory.
func TestOntoADirectoryWithEntries(t *testing.T) {
	fx := newFixture(t, Options{})
	writeFile(t, fx.in("file"), "content")
	writeFile(t, fx.in("dir/inside"), "x")
	writeFile(t, fx.in("full/kept"), "y")
	if err := os.Mkdir(fx.in("empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := fx.fs.Copy(fx.in("file"), fx.in("full"), WriteOptions{})
	wantErr(t, "Copy(a file onto a directory with entries)", err, ErrDestinationNotEmpty)
	_, err = fx.fs.Copy(fx.in("file"), fx.in("full"), WriteOptions{MustNotExist: true})
	wantErr(t, "Copy(a file onto a directory with entries, must not exist)", err, ErrDestinationNotEmpty)
	wantErr(t, "Move(a file onto a directory with entries)", fx.fs.Move(fx.in("file"), fx.in("full"), true), ErrDestinationNotEmpty)
	wantErr(t, "Move(a directory onto a directory with entries)", fx.fs.Move(fx.in("dir"), fx.in("full"), true), ErrDestinationNotEmpty)
	wantErr(t, "Move(a directory onto a directory with entries, no overwrite)", fx.fs.Move(fx.in("dir"), fx.in("full"), false), ErrExists)
	if got := readFile(t, fx.in("full/kept")); got != "y" {
		t.Errorf("the destination's entry holds %q after the refusals, want y", got)
	}
	if got := readFile(t, fx.in("dir/inside")); got != "x" {
		t.Errorf("the source's entry holds %q after the refusals, want x", got)
	}
	_, err = fx.fs.Copy(fx.in("file"), fx.in("empty"), WriteOptions{})
	wantErr(t, "Copy(a file onto an empty directory)", err, ErrIsDirectory)
	wantErr(t, "Move(a file onto an empty directory)", fx.fs.Move(fx.in("file"), fx.in("empty"), true), ErrIsDirectory)
	wantErr(t, "Move(a directory onto an empty directory)", fx.fs.Move(fx.in("dir"), fx.in("empty"), true), nil)
	if got := readFile(t, fx.in("empty/inside")); got != "x" {
		t.Errorf("the moved directory's entry holds %q, want x", got)
	}
}
