package files

import (
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDroppedFilesAreReleasedAfterward checks that a write or a move over a
// file, and a remove of one, keep the file they drop open until the
// operation is over, and then hand it to be released: the kernel frees a
// dropped file's blocks as its last reference goes, which for a large file
// would otherwise be the operation's own slowest step.
func TestDroppedFilesAreReleasedAfterward(t *testing.T) {
	ops := []struct {
		name string
		do   func(fx fixture) error
	}{
		{"write over", func(fx fixture) error {
			_, err := fx.fs.Write(fx.in("f"), strings.NewReader("new"), WriteOptions{})
			return err
		}},
		{"write over, named temp", func(fx fixture) error {
			fx.fs.noTmpfile = true
			_, err := fx.fs.Write(fx.in("f"), strings.NewReader("new"), WriteOptions{})
			return err
		}},
		{"copy over", func(fx fixture) error {
			writeFile(t, fx.in("src"), "new")
			_, err := fx.fs.Copy(fx.in("src"), fx.in("f"), WriteOptions{})
			return err
		}},
		{"move over", func(fx fixture) error {
			writeFile(t, fx.in("src"), "new")
			return fx.fs.Move(fx.in("src"), fx.in("f"), true)
		}},
		{"remove", func(fx fixture) error { return fx.fs.Remove(fx.in("f"), false) }},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			fx := newFixture(t, Options{MaxFileBytes: 100})
			writeFile(t, fx.in("f"), "old")
			var old unix.Stat_t
			if err := unix.Stat(fx.in("f"), &old); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var held []unix.Stat_t
			fx.fs.releaseDropped = func(fd int) {
				var st unix.Stat_t
				if err := unix.Fstat(fd, &st); err != nil {
					t.Errorf("the held file: %v", err)
				}
				mu.Lock()
				held = append(held, st)
				mu.Unlock()
				unix.Close(fd)
			}
			if err := op.do(fx); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(held) != 1 {
				t.Fatalf("%d files released, want the dropped one", len(held))
			}
			if st := held[0]; st.Ino != old.Ino || st.Dev != old.Dev || st.Nlink != 0 {
				t.Errorf("released inode %d (links %d), want the dropped %d with no link left", st.Ino, st.Nlink, old.Ino)
			}
		})
	}
}

// TestNothingDroppedNothingHeld checks that an operation that drops no file
// (a new file, a failed precondition, a move refused) releases nothing.
func TestNothingDroppedNothingHeld(t *testing.T) {
	fx := newFixture(t, Options{MaxFileBytes: 100})
	released := 0
	fx.fs.releaseDropped = func(fd int) { released++; unix.Close(fd) }
	if _, err := fx.fs.Write(fx.in("new"), strings.NewReader("x"), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := fx.fs.Write(fx.in("new"), strings.NewReader("y"), WriteOptions{MustNotExist: true})
	wantErr(t, "Write(MustNotExist)", err, ErrExists)
	writeFile(t, fx.in("src"), "z")
	wantErr(t, "Move(no overwrite)", fx.fs.Move(fx.in("src"), fx.in("new"), false), ErrExists)
	if released != 0 {
		t.Errorf("%d files released, want none", released)
	}
	if got := readFile(t, fx.in("new")); got != "x" {
		t.Errorf("content = %q, want x", got)
	}
}
