package files

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSameFile: a move or a copy of a file onto itself is ErrSameFile, with
// or without overwrite, and changes nothing, as mv and cp answer "are the
// same file": the same entry (by one name or through a symlinked
// directory), two hard links of one file, or a symlink (relative or
// absolute, through one link or several) and the file it leads to. Renamed,
// a symlink onto the file it names would leave in the file's place a link to
// itself, the content lost; rename(2) of one hard link onto another does
// nothing at all, and says so with success.
func TestSameFile(t *testing.T) {
	fx := newFixture(t, Options{})
	writeFile(t, fx.in("data.txt"), "precious")
	writeFile(t, fx.in("other"), "other")
	if err := os.Link(fx.in("data.txt"), fx.in("hard")); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"link":  "data.txt",
		"chain": "link",
		"abs":   fx.in("data.txt"),
		"here":  ".",
		"d/up":  "../data.txt",
	}
	for name, target := range links {
		if err := os.MkdirAll(filepath.Dir(fx.in(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, fx.in(name)); err != nil {
			t.Fatal(err)
		}
	}
	ino := func(name string) uint64 {
		t.Helper()
		fi, err := os.Lstat(fx.in(name))
		if err != nil {
			t.Fatalf("%s after the refusals: %v", name, err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	data := ino("data.txt")
	unchanged := func(call string) {
		t.Helper()
		if got, err := os.ReadFile(fx.in("data.txt")); err != nil || string(got) != "precious" || ino("data.txt") != data || ino("hard") != data {
			t.Fatalf("after %s data.txt holds %q (%v), or is another file", call, got, err)
		}
		for name, target := range links {
			if got, err := os.Readlink(fx.in(name)); err != nil || got != target {
				t.Fatalf("after %s the link %s leads to %q (%v), want %q", call, name, got, err, target)
			}
		}
	}
	for _, overwrite := range []bool{true, false} {
		for _, tt := range []struct{ from, to string }{
			{"link", "data.txt"},
			{"chain", "data.txt"},
			{"abs", "data.txt"},
			{"d/up", "data.txt"},
			{"hard", "data.txt"},
			{"data.txt", "hard"},
			{"data.txt", "data.txt"},
			{"here/data.txt", "data.txt"},
			{"d", "here/d"},
		} {
			call := "Move(" + tt.from + ", " + tt.to + ", overwrite " + map[bool]string{true: "true", false: "false"}[overwrite] + ")"
			wantErr(t, call, fx.fs.Move(fx.in(tt.from), fx.in(tt.to), overwrite), ErrSameFile)
			unchanged(call)
		}
		for _, tt := range []struct{ from, to string }{
			{"link", "data.txt"},
			{"data.txt", "link"},
			{"chain", "link"},
			{"hard", "data.txt"},
			{"data.txt", "data.txt"},
			{"here/data.txt", "d/up"},
		} {
			call := "Copy(" + tt.from + ", " + tt.to + ", must not exist " + map[bool]string{true: "false", false: "true"}[overwrite] + ")"
			_, err := fx.fs.Copy(fx.in(tt.from), fx.in(tt.to), WriteOptions{MustNotExist: !overwrite})
			wantErr(t, call, err, ErrSameFile)
			unchanged(call)
		}
	}
	// A symlink onto a file it does not lead to is an ordinary move, and the
	// file onto the symlink that names it loses nothing: mv does both.
	wantErr(t, "Move(link, other)", fx.fs.Move(fx.in("link"), fx.in("other"), true), nil)
	if got, err := os.ReadFile(fx.in("other")); err != nil || string(got) != "precious" {
		t.Errorf("other, a link to data.txt now, reads %q (%v)", got, err)
	}
	wantErr(t, "Move(data.txt, other)", fx.fs.Move(fx.in("data.txt"), fx.in("other"), true), nil)
	if got := readFile(t, fx.in("other")); got != "precious" {
		t.Errorf("other = %q after data.txt moved onto it, want precious", got)
	}
}

// TestMoveOntoARoot: a root is never replaced, so a move onto one is
// ErrIsRoot, with or without overwrite (not ErrExists, whose remedy,
// overwrite, could never work), and changes nothing; so is a move onto a
// directory that holds one.
func TestMoveOntoARoot(t *testing.T) {
	base := t.TempDir()
	outer := filepath.Join(base, "outer")
	inner := filepath.Join(outer, "inner")
	holder := filepath.Join(outer, "holder")
	deep := filepath.Join(holder, "deep")
	writeFile(t, filepath.Join(outer, "x"), "x")
	writeFile(t, filepath.Join(inner, "kept"), "kept")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(outer, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	fs, err := New([]string{outer, inner, deep}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	for _, overwrite := range []bool{true, false} {
		for _, tt := range []struct{ from, to string }{
			{"x", "inner"},
			{"empty", "inner"},
			{"x", "."},
			{"inner/kept", "."},
			{"empty", "holder"},
		} {
			err := fs.Move(filepath.Join(outer, tt.from), filepath.Join(outer, tt.to), overwrite)
			wantErr(t, "Move("+tt.from+", "+tt.to+")", err, ErrIsRoot)
		}
	}
	if got := readFile(t, filepath.Join(inner, "kept")); got != "kept" {
		t.Errorf("the inner root's file = %q after the refusals", got)
	}
	if got := readFile(t, filepath.Join(outer, "x")); got != "x" {
		t.Errorf("x = %q after the refusals", got)
	}
}
