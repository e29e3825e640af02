package files

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestEscapes tries to leave the root every way we know, through every
// operation that takes a path. Each is refused with ErrOutsideRoot, or with
// ErrNotFound (ErrInvalidPath) where that is the honest answer: an encoded
// "%2e%2e" that reaches this package is a file name, since decoding is the
// HTTP layer's, and a symlink loop leads nowhere. Nothing outside is read,
// written or removed.
func TestEscapes(t *testing.T) {
	tests := []struct {
		name string
		path func(fx fixture, base string) string
		want error
		// parentOut is set when what leads outside is a directory on the way,
		// so that a write of a new name there is refused too.
		parentOut bool
	}{
		{"dot-dot", func(fx fixture, base string) string { return fx.root + "/../" + base + "/secret" }, ErrOutsideRoot, true},
		{"dot-dot deeper", func(fx fixture, base string) string { return fx.root + "/inside/../../" + base + "/secret" }, ErrOutsideRoot, true},
		{"dot-dot past /", func(fx fixture, base string) string {
			return fx.root + strings.Repeat("/..", 30) + fx.outside + "/secret"
		}, ErrOutsideRoot, true},
		{"another absolute path", func(fixture, string) string { return "/etc/passwd" }, ErrOutsideRoot, true},
		{"a sibling sharing the prefix", func(fx fixture, _ string) string { return fx.root + "x/secret" }, ErrOutsideRoot, true},
		{"the root's parent", func(fx fixture, _ string) string { return filepath.Dir(fx.root) }, ErrOutsideRoot, true},
		{"absolute symlink out", func(fx fixture, _ string) string { return fx.in("abs-out") }, ErrOutsideRoot, false},
		{"relative symlink out", func(fx fixture, _ string) string { return fx.in("rel-out") }, ErrOutsideRoot, false},
		{"through an absolute directory symlink", func(fx fixture, _ string) string { return fx.in("abs-dir/secret") }, ErrOutsideRoot, true},
		{"through a relative directory symlink", func(fx fixture, _ string) string { return fx.in("rel-dir/secret") }, ErrOutsideRoot, true},
		{"a chain of symlinks", func(fx fixture, _ string) string { return fx.in("chain") }, ErrOutsideRoot, false},
		{"symlink up from a subdirectory", func(fx fixture, _ string) string { return fx.in("inside/up-out/secret") }, ErrOutsideRoot, true},
		{"symlink to /proc/self/root", func(fx fixture, _ string) string { return fx.in("proc") + fx.outside + "/secret" }, ErrOutsideRoot, true},
		{"relative symlink to /proc/self/root", func(fx fixture, _ string) string { return fx.in("proc-rel") + fx.outside + "/secret" }, ErrOutsideRoot, true},
		{"/proc/self/root in front", func(fx fixture, _ string) string { return "/proc/self/root" + fx.outside + "/secret" }, ErrOutsideRoot, true},
		{"/proc/self/root in front of the root", func(fx fixture, _ string) string { return "/proc/self/root" + fx.in("inside/file") }, ErrOutsideRoot, true},
		{"/proc/self/cwd in front of the root", func(fx fixture, _ string) string { return "/proc/self/cwd/" + fx.in("inside/file") }, ErrOutsideRoot, true},
		{"absolute symlink inside", func(fx fixture, _ string) string { return fx.in("abs-inside") }, ErrOutsideRoot, false},
		{"absolute symlink to the root", func(fx fixture, _ string) string { return fx.in("abs-root/inside/file") }, ErrOutsideRoot, true},
		{"encoded dot-dot", func(fx fixture, base string) string { return fx.root + "/%2e%2e/" + base + "/secret" }, ErrNotFound, false},
		{"encoded slash", func(fx fixture, base string) string { return fx.root + "/..%2f" + base + "%2fsecret" }, ErrNotFound, false},
		{"backslashes", func(fx fixture, base string) string { return fx.root + `/..\` + base + `\secret` }, ErrNotFound, false},
		{"symlink loop", func(fx fixture, _ string) string { return fx.in("loop") }, ErrNotFound, false},
		{"relative path", func(_ fixture, base string) string { return base + "/secret" }, ErrInvalidPath, true},
		{"NUL", func(fx fixture, base string) string { return fx.root + "/inside/file\x00/../../" + base + "/secret" }, ErrInvalidPath, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx, secret := escapeFixture(t)
			path := tt.path(fx, filepath.Base(fx.outside))
			file, _, err := fx.fs.Open(path)
			if err == nil {
				file.Close()
			}
			wantErr(t, "Open", err, tt.want)
			_, err = fx.fs.Stat(path)
			wantErr(t, "Stat", err, tt.want)
			_, err = fx.fs.Copy(path, fx.in("copied"), WriteOptions{})
			wantErr(t, "Copy from", err, tt.want)
			if tt.parentOut {
				_, err = fx.fs.Write(path, strings.NewReader("x"), WriteOptions{})
				wantErr(t, "Write", err, tt.want)
				wantErr(t, "Mkdir", fx.fs.Mkdir(path), tt.want)
				wantErr(t, "Remove", fx.fs.Remove(path, true), tt.want)
				wantErr(t, "Move out", fx.fs.Move(fx.in("inside/file"), path, true), tt.want)
				wantErr(t, "Move in", fx.fs.Move(path, fx.in("moved"), true), tt.want)
				_, err = fx.fs.List(path, "", 0)
				wantErr(t, "List", err, tt.want)
				_, err = fx.fs.Walk(path, WalkOptions{})
				wantErr(t, "Walk", err, tt.want)
			} else {
				// The final name is inside: a write goes to the file it
				// names, refused as a read is when that is outside, and a
				// removal removes the link.
				_, err = fx.fs.Write(path, strings.NewReader("x"), WriteOptions{})
				if errors.Is(tt.want, ErrOutsideRoot) {
					wantErr(t, "Write", err, tt.want)
				}
				_ = fx.fs.Remove(path, true)
			}
			if got := readFile(t, secret); got != "SECRET" {
				t.Errorf("the secret is %q now", got)
			}
			if got := names(t, fx.outside); len(got) != 1 {
				t.Errorf("outside holds %q, want only the secret", got)
			}
		})
	}
}

// escapeFixture is a root full of ways out, and a secret outside it.
func escapeFixture(t *testing.T) (fixture, string) {
	t.Helper()
	fx := newFixture(t, Options{})
	secret := filepath.Join(fx.outside, "secret")
	writeFile(t, secret, "SECRET")
	writeFile(t, fx.in("inside/file"), "inside")
	rel := func(target string) string {
		r, err := filepath.Rel(fx.root, target)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	links := map[string]string{
		"abs-out":       secret,
		"rel-out":       rel(secret),
		"abs-dir":       fx.outside,
		"rel-dir":       rel(fx.outside),
		"chain":         "rel-out",
		"proc":          "/proc/self/root",
		"proc-rel":      strings.Repeat("../", 20) + "proc/self/root",
		"abs-inside":    fx.in("inside/file"),
		"abs-root":      fx.root,
		"loop":          "loop",
		"inside/up-out": "../../" + filepath.Base(fx.outside),
	}
	for name, target := range links {
		if err := os.Symlink(target, fx.in(name)); err != nil {
			t.Fatal(err)
		}
	}
	return fx, secret
}

// A hard link inside the root to a file outside is the same inode: it reads
// as the file, and a write replaces the link, leaving the file outside as it
// was.
func TestHardLinkOut(t *testing.T) {
	fx := newFixture(t, Options{})
	secret := filepath.Join(fx.outside, "secret")
	writeFile(t, secret, "SHARED")
	if err := os.Link(secret, fx.in("hard")); err != nil {
		t.Skipf("cannot hard-link across the fixture's directories: %v", err)
	}
	file, _, err := fx.fs.Open(fx.in("hard"))
	if err != nil {
		t.Fatal(err)
	}
	file.Close()
	if _, err := fx.fs.Write(fx.in("hard"), strings.NewReader("replaced"), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, secret); got != "SHARED" {
		t.Errorf("the file outside reads %q after a write through its hard link, want SHARED", got)
	}
	if got := readFile(t, fx.in("hard")); got != "replaced" {
		t.Errorf("the link reads %q, want replaced", got)
	}
}

// A directory swapped for a symlink out, over and over, while reads and
// writes go through it: none ever reaches the file outside.
func TestSymlinkSwapRace(t *testing.T) {
	fx := newFixture(t, Options{})
	writeFile(t, filepath.Join(fx.outside, "secret"), "SECRET")
	writeFile(t, fx.in("real/secret"), "inside")
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; !stop.Load(); i++ {
			// swap: a directory one moment, a symlink out the next
			_ = os.Rename(fx.in("swap"), fx.in("old"))
			_ = os.RemoveAll(fx.in("old"))
			if i%2 == 0 {
				_ = os.Symlink(fx.outside, fx.in("swap"))
			} else {
				_ = os.Symlink("real", fx.in("swap"))
			}
		}
	})
	for range 2000 {
		file, _, err := fx.fs.Open(fx.in("swap/secret"))
		if err == nil {
			b := make([]byte, 16)
			n, _ := file.Read(b)
			file.Close()
			if string(b[:n]) == "SECRET" {
				t.Fatal("read the file outside through the swapped symlink")
			}
		} else if !errors.Is(err, ErrOutsideRoot) && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrNotADirectory) {
			// Not a directory: the name was a symlink when opened as a
			// directory and gone when read as a link.
			t.Fatalf("Open = %v, want outside, not found or not a directory", err)
		}
		_, _ = fx.fs.Write(fx.in("swap/written"), strings.NewReader("x"), WriteOptions{})
	}
	stop.Store(true)
	wg.Wait()
	if got := names(t, fx.outside); len(got) != 1 {
		t.Errorf("outside holds %q, want only the secret", got)
	}
}
