package shellsnap

import (
	"bytes"
	"errors"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A bash session command's dump is complete when the shell closes its
// file, the end of the dump line's redirection, which comes before the
// shell exits and is reaped: about a millisecond of a session command's
// answer. A DumpWatch sees that close (inotify), so that the caller can
// read the state while the shell exits. What it read is the state Finish
// reads after the exit only if nothing wrote in the command's directory
// meanwhile (a second dump, a background process that found the files):
// Quiet says so, and otherwise the caller finishes again.
//
// inotify is used directly, not through fsnotify: the watch needs the
// close-after-write event (not in fsnotify's public operations), a
// change of mask after that first event, and a read of what queued that
// never waits (Quiet), none of which fsnotify's channel of events offers.

// DumpWatch watches a session command's directory for the end of its dump.
type DumpWatch struct {
	f      *os.File // the inotify instance, non-blocking
	dir    string
	dumped chan struct{}
	// dirty is set when a write followed the dump's close in the events
	// read with it.
	dirty bool

	mu     sync.Mutex
	closed bool
}

// The watch sees only closes after writing until the dump's, then every
// change to a file of the directory (a write, a truncation, a close after
// writing, a file created, moved or removed): a watch of writes would
// cost the shell an event on each line of its dump, which bash writes
// one at a time. A writer that wrote before the change of mask and has
// not closed the file by Quiet is not seen; it could as well have written
// after Finish read the files.
const (
	dumpMask    = unix.IN_CLOSE_WRITE
	changedMask = unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_ATTRIB | unix.IN_CREATE |
		unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_DELETE | unix.IN_DELETE_SELF
)

// WatchDump starts watching for the end of c's dump; nil for a command
// whose dump it cannot watch (zsh's, or inotify refused). The caller
// closes it.
func (c *SessionCommand) WatchDump() *DumpWatch {
	if c.shell != "bash" || c.Dir == "" {
		return nil
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil
	}
	if _, err := unix.InotifyAddWatch(fd, c.Dir, dumpMask); err != nil {
		unix.Close(fd)
		return nil
	}
	w := &DumpWatch{f: os.NewFile(uintptr(fd), "inotify"), dir: c.Dir, dumped: make(chan struct{})}
	go w.wait()
	return w
}

// Dumped is closed once the dump's file was closed after writing: the
// dump is complete (or the shell wrote it and went on: Quiet tells).
func (w *DumpWatch) Dumped() <-chan struct{} { return w.dumped }

// wait reads events until the dump's file is closed after writing, or the
// watch is closed.
func (w *DumpWatch) wait() {
	buf := make([]byte, 4096)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return
		}
		dumped, dirty := false, false
		eachEvent(buf[:n], func(mask uint32, name string) {
			dirty = dirty || dumped
			dumped = dumped || mask&unix.IN_CLOSE_WRITE != 0 && name == "dump"
		})
		if dumped {
			w.dirty = dirty
			if err := w.watchChanges(); err != nil {
				w.dirty = true
			}
			close(w.dumped)
			return
		}
	}
}

// watchChanges changes the watch's mask to every change (changedMask).
func (w *DumpWatch) watchChanges() error {
	rc, err := w.f.SyscallConn()
	if err != nil {
		return err
	}
	var werr error
	if err := rc.Control(func(fd uintptr) {
		_, werr = unix.InotifyAddWatch(int(fd), w.dir, changedMask)
	}); err != nil {
		return err
	}
	return werr
}

// eachEvent calls f with each event of events, inotify's.
func eachEvent(events []byte, f func(mask uint32, name string)) {
	for len(events) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&events[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(events) {
			return
		}
		name, _, _ := bytes.Cut(events[unix.SizeofInotifyEvent:end], []byte{0})
		f(ev.Mask, string(name))
		events = events[end:]
	}
}

// Quiet reports whether nothing wrote in the command's directory since
// the dump's file was closed (Dumped) up to now, but Finish moving the
// functions' listing out: the files read since then are the ones Finish
// would read now. The shell's own end writes nothing there.
func (w *DumpWatch) Quiet() bool {
	select {
	case <-w.dumped:
	default:
		return false
	}
	if w.dirty {
		return false
	}
	rc, err := w.f.SyscallConn()
	if err != nil {
		return false
	}
	quiet, empty := true, false
	buf := make([]byte, 4096)
	for quiet && !empty {
		if err := rc.Read(func(fd uintptr) bool {
			n, rerr := unix.Read(int(fd), buf)
			switch {
			case errors.Is(rerr, unix.EAGAIN):
				empty = true
			case rerr != nil || n <= 0:
				quiet = false
			default:
				eachEvent(buf[:n], func(mask uint32, name string) {
					quiet = quiet && mask == unix.IN_MOVED_FROM && name == "fns"
				})
			}
			return true // never wait: an empty queue is the answer
		}); err != nil {
			return false
		}
	}
	return quiet
}

// Close ends the watch.
func (w *DumpWatch) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		w.f.Close()
	}
}
