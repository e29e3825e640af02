package files

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Readers of a file replaced over and over see one whole version or the
// other, never a part or a mix.
func TestReplaceUnderConcurrentReaders(t *testing.T) {
	fx := newFixture(t, Options{})
	path := fx.in("f")
	const size = 256 << 10
	versions := [][]byte{bytes.Repeat([]byte("a"), size), bytes.Repeat([]byte("b"), size)}
	if _, err := fx.fs.Write(path, bytes.NewReader(versions[0]), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				file, _, err := fx.fs.Open(path)
				if err != nil {
					t.Errorf("Open during replacement = %v", err)
					return
				}
				got, err := io.ReadAll(file)
				file.Close()
				if err != nil || !bytes.Equal(got, versions[0]) && !bytes.Equal(got, versions[1]) {
					t.Errorf("a reader saw %d bytes starting %q (%v), want one whole version", len(got), got[:min(len(got), 8)], err)
					return
				}
				reads.Add(1)
			}
		})
	}
	for i := range 200 {
		if _, err := fx.fs.Write(path, bytes.NewReader(versions[i%2]), WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d whole reads during 200 replacements", reads.Load())
}

// Of writers conditioned on one ETag, exactly one lands; the others are
// told the file changed.
func TestIfMatchRace(t *testing.T) {
	fx := newFixture(t, Options{})
	path := fx.in("f")
	in, err := fx.fs.Write(path, strings.NewReader("v0"), WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Widens the window between the last check and the rename, where a
	// second writer must not pass its check.
	fx.fs.beforeRename = func() { time.Sleep(time.Millisecond) }
	const writers = 16
	var wg sync.WaitGroup
	var won, lost atomic.Int64
	for i := range writers {
		wg.Go(func() {
			_, err := fx.fs.Write(path, strings.NewReader(strings.Repeat("x", i+1)), WriteOptions{IfMatch: []string{in.ETag}})
			switch {
			case err == nil:
				won.Add(1)
			case errors.Is(err, ErrPreconditionFailed):
				lost.Add(1)
			default:
				t.Errorf("Write = %v", err)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 || lost.Load() != writers-1 {
		t.Errorf("%d writers on one ETag: %d won, %d failed the precondition; want 1 and %d", writers, won.Load(), lost.Load(), writers-1)
	}
}

// Of writers that create a file only if it does not exist, exactly one does.
func TestMustNotExistRace(t *testing.T) {
	fx := newFixture(t, Options{})
	path := fx.in("f")
	const writers = 16
	var wg sync.WaitGroup
	var won, lost atomic.Int64
	for range writers {
		wg.Go(func() {
			_, err := fx.fs.Write(path, strings.NewReader("x"), WriteOptions{MustNotExist: true})
			switch {
			case err == nil:
				won.Add(1)
			case errors.Is(err, ErrExists):
				lost.Add(1)
			default:
				t.Errorf("Write = %v", err)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 || lost.Load() != writers-1 {
		t.Errorf("%d creating writers: %d won, %d found it existing; want 1 and %d", writers, won.Load(), lost.Load(), writers-1)
	}
}

// A file another program creates between a create-only write's last check
// and its rename is not replaced.
func TestMustNotExistAgainstOthers(t *testing.T) {
	fx := newFixture(t, Options{})
	path := fx.in("f")
	fx.fs.beforeRename = func() { writeFile(t, path, "theirs") }
	_, err := fx.fs.Write(path, strings.NewReader("ours"), WriteOptions{MustNotExist: true})
	wantErr(t, "Write(create only, created meanwhile)", err, ErrExists)
	if got := readFile(t, path); got != "theirs" {
		t.Errorf("content = %q, want theirs", got)
	}
	if got := names(t, fx.root); len(got) != 1 {
		t.Errorf("root holds %q, want only f", got)
	}
}
