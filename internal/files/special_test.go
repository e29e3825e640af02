package files

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSpecialFilesNeverOpened: a FIFO, a socket and a character device inside
// the root are refused by every operation that meets one, with
// ErrNotRegular where a file was wanted and ErrNotADirectory where a
// directory was, and none of them is ever opened: an open can block (a FIFO
// without a writer) or act (a device's driver).
func TestSpecialFilesNeverOpened(t *testing.T) {
	fx := newFixture(t, Options{})
	writeFile(t, fx.in("f"), "x")
	specials := []string{"fifo", "socket"}
	if err := unix.Mkfifo(fx.in("fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", fx.in("socket"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// /dev/null's numbers: should it be opened after all, nothing happens.
	if err := unix.Mknod(fx.in("device"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err == nil {
		specials = append(specials, "device")
	} else {
		t.Logf("no character device (%v): tested with the FIFO and the socket", err)
	}
	for _, kind := range specials {
		p := fx.in(kind)
		opens := watchOpens(t, p)
		ops := []struct {
			name string
			call func() error
			want error
		}{
			{"Open", func() error {
				file, _, err := fx.fs.Open(p)
				if err == nil {
					file.Close()
				}
				return err
			}, ErrNotRegular},
			{"Copy from", func() error { _, err := fx.fs.Copy(p, fx.in("copy"), WriteOptions{}); return err }, ErrNotRegular},
			{"List", func() error { _, err := fx.fs.List(p, "", 0); return err }, ErrNotADirectory},
			{"Walk", func() error { _, err := fx.fs.Walk(p, WalkOptions{}); return err }, ErrNotADirectory},
			{"Stat beneath", func() error { _, err := fx.fs.Stat(p + "/x"); return err }, ErrNotADirectory},
			{"Write beneath", func() error {
				_, err := fx.fs.Write(p+"/x", strings.NewReader("x"), WriteOptions{})
				return err
			}, ErrNotADirectory},
			{"Mkdir beneath", func() error { return fx.fs.Mkdir(p + "/x") }, ErrNotADirectory},
			{"Remove beneath", func() error { return fx.fs.Remove(p+"/x", true) }, ErrNotADirectory},
			{"Move from beneath", func() error { return fx.fs.Move(p+"/x", fx.in("y"), false) }, ErrNotADirectory},
			{"Move to beneath", func() error { return fx.fs.Move(fx.in("f"), p+"/x", false) }, ErrNotADirectory},
			// A write wants a file where it writes: it does not replace a
			// FIFO another program reads, nor the socket a server listens on.
			{"Write onto", func() error {
				_, err := fx.fs.Write(p, strings.NewReader("x"), WriteOptions{})
				return err
			}, ErrNotRegular},
			{"Copy onto", func() error { _, err := fx.fs.Copy(fx.in("f"), p, WriteOptions{}); return err }, ErrNotRegular},
		}
		for _, op := range ops {
			name := op.name + "(" + kind + ")"
			wantErr(t, name, unblocking(t, name, fx.in("fifo"), op.call), op.want)
			if n := opens(); n > 0 {
				t.Errorf("%s opened the %s (%d times)", name, kind, n)
			}
			if st, err := os.Lstat(p); err != nil || st.Mode().IsRegular() {
				t.Errorf("after %s the %s is %v (%v), want it as it was", name, kind, st, err)
			}
		}
	}
}

// unblocking runs call and fails the test when it has not returned within
// 5 s; it then opens fifo for writing, which lets go a reader blocked in its
// open, so that the test ends either way.
func unblocking(t *testing.T, name, fifo string, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Errorf("%s blocked", name)
		if fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
			defer unix.Close(fd)
		}
		return <-done
	}
}

// watchOpens returns what counts the opens of the file at path since it was
// last called (inotify's IN_OPEN: a stat or an O_PATH descriptor is none).
func watchOpens(t *testing.T, path string) (count func() int) {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	return func() int {
		buf := make([]byte, 4096)
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EAGAIN) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		events := 0
		// Each event is its header (whose last field is the length of the
		// name that follows) and that name.
		for off := 0; off < n; events++ {
			off += unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(buf[off+unix.SizeofInotifyEvent-4:]))
		}
		return events
	}
}
