package exec

import (
	"fmt"
	"os"

	"github.com/creack/pty"
	"github.com/snapexec/snapexec/internal/sandbox"
	"golang.org/x/sys/unix"
)

// Pty is the one output stream of a process that runs on a terminal: what the
// terminal shows, stdout and stderr together as the child wrote them, with
// the line discipline's echo of what was typed. It counts as stdout in a
// result and in the byte totals.
const Pty Stream = "pty"

// TTYSize is a terminal's size in character cells.
type TTYSize struct {
	Cols, Rows uint16
}

// terminal is the server's side of a process's pseudo-terminal.
type terminal struct {
	// master is pollable (non-blocking under the runtime's poller), so that
	// closing it ends a read in progress and a write honours a deadline.
	master *os.File
}

// openTerminal opens a pseudo-terminal of the given size, in pts when it is
// not nil, else among the host's: the master, for the server, and the slave,
// for the child. pty.Open (or pts.OpenPTY) finds and unlocks the slave; the
// master it returns has been put in blocking mode by ioctls through
// os.File.Fd, so the master kept is a non-blocking duplicate.
func openTerminal(size TTYSize, pts *sandbox.Devpts) (*terminal, *os.File, error) {
	open := pty.Open
	if pts != nil {
		open = pts.OpenPTY
	}
	master, slave, err := open()
	if err != nil {
		return nil, nil, err
	}
	fd, err := unix.FcntlInt(master.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	_ = master.Close()
	if err == nil {
		err = unix.SetNonblock(fd, true)
	}
	if err != nil {
		_ = slave.Close()
		return nil, nil, err
	}
	t := &terminal{master: os.NewFile(uintptr(fd), "ptmx")}
	if err := t.resize(size); err != nil {
		_ = t.master.Close()
		_ = slave.Close()
		return nil, nil, err
	}
	return t, slave, nil
}

// resize sets the terminal's size. The kernel sends SIGWINCH to the
// terminal's foreground process group when the size changes.
func (t *terminal) resize(size TTYSize) error {
	return t.control(func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: size.Rows, Col: size.Cols})
	})
}

// foreground returns the terminal's foreground process group (tcgetpgrp), or
// 0 when it has none or the terminal is closed.
func (t *terminal) foreground() int {
	pgrp := 0
	_ = t.control(func(fd int) error {
		g, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
		if err == nil && g > 0 {
			pgrp = g
		}
		return err
	})
	return pgrp
}

// writer returns a second handle on the master for stdin, so that closing
// stdin does not close the terminal: the terminal hangs up only when the
// process has ended and both handles are closed.
func (t *terminal) writer() (*os.File, error) {
	var w *os.File
	err := t.control(func(fd int) error {
		dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return err
		}
		// The duplicate shares the master's non-blocking flag: NewFile puts it
		// under the poller too.
		w = os.NewFile(uintptr(dup), "ptmx")
		return nil
	})
	return w, err
}

// control runs f on the master's descriptor without taking it out of the
// poller (os.File.Fd would make it blocking).
func (t *terminal) control(f func(fd int) error) error {
	rc, err := t.master.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// Resize sets the size of the process's terminal; its foreground process
// group gets SIGWINCH. It returns ErrNotATTY for a process without a
// terminal and ErrProcessExited once the process has exited.
func (p *Process) Resize(size TTYSize) error {
	if p.tty == nil {
		return ErrNotATTY
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return ErrProcessExited
	}
	if err := p.tty.resize(size); err != nil {
		return fmt.Errorf("%w: %w", ErrProcessExited, err)
	}
	p.ttySize = size
	return nil
}

// signalTarget is the process group Signal reaches: the terminal's
// foreground group for a process on a terminal (a shell's running job, as
// a keyboard's Ctrl-C reaches it), the process's own group otherwise.
func (p *Process) signalTarget() int {
	if p.tty != nil {
		if g := p.tty.foreground(); g > 0 {
			return g
		}
	}
	return p.pid
}
