package sandbox

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Every terminal of the host is a file under the host's /dev/pts, which a
// confined command must be able to open: its own terminal has a name there,
// and a program it runs (script, tmux, expect, Python's pty) opens new
// terminals through /dev/ptmx and then their names. Root's command, which
// keeps dac_override, could then open every other terminal too (the server's
// other terminals, an administrator's SSH session), read what is typed there,
// write to it and resize it. So a command that confines files gets a devpts
// instance of its own at /dev/pts, in its mount namespace (confineMounts):
// none of the host's terminals is there, and /dev/ptmx, which opens the
// devpts that lies beside it, makes its new terminals there. A command
// started on a terminal has that terminal opened from its instance
// (Sandbox.Devpts), so that its terminal has its name there (tty(1) finds it).

// Devpts is a devpts instance of a command's own, mounted nowhere in the
// server's namespace.
type Devpts struct {
	mnt int // fsmount's descriptor: the instance's root
}

// newDevpts makes a fresh devpts instance with devpts' default modes
// (terminals 0600, its ptmx 0000, as the host's usually are).
func newDevpts() (*Devpts, error) {
	fs, err := unix.Fsopen("devpts", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("fsopen(devpts): %w", err)
	}
	defer unix.Close(fs)
	if err := unix.FsconfigCreate(fs); err != nil {
		return nil, fmt.Errorf("creating a devpts: %w", err)
	}
	mnt, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return nil, fmt.Errorf("fsmount(devpts): %w", err)
	}
	return &Devpts{mnt: mnt}, nil
}

// Devpts returns a devpts instance for a command confined by p, from which
// its terminal is to be opened (OpenPTY) and which Start mounts at its
// /dev/pts; nil when p's command sees the host's /dev/pts (ownDevpts), and
// its terminal is one of the host's (a nil Sandbox's commands too).
func (s *Sandbox) Devpts(p Policy) (*Devpts, error) {
	if s == nil || !s.ownDevpts(p) {
		return nil, nil
	}
	return newDevpts()
}

// ownDevpts reports whether a command confined by p gets a devpts of its
// own: when it confines files, and the server can make one.
func (s *Sandbox) ownDevpts(p Policy) bool {
	return p.confinesFiles() && s.support.MountErr == nil && s.support.DevptsErr == nil
}

// OpenPTY opens a new pseudo-terminal in d: its master, and its slave,
// unlocked, opened through the master (TIOCGPTPEER), since no path of the
// server's names it. Both are close-on-exec.
func (d *Devpts) OpenPTY() (master, slave *os.File, err error) {
	m, err := unix.Openat(d.mnt, "ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("opening a terminal: %w", err)
	}
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(m)
		return nil, nil, fmt.Errorf("unlocking a terminal: %w", err)
	}
	n, err := unix.IoctlGetInt(m, unix.TIOCGPTN)
	if err != nil {
		unix.Close(m)
		return nil, nil, fmt.Errorf("numbering a terminal: %w", err)
	}
	s, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(m), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		unix.Close(m)
		return nil, nil, fmt.Errorf("opening a terminal's slave: %w", errno)
	}
	// Named as the command will see it.
	name := fmt.Sprintf("/dev/pts/%d", n)
	return os.NewFile(uintptr(m), "ptmx"), os.NewFile(s, name), nil
}

// Close lets go of the server's hold on d: a command it was mounted for, and
// the terminals opened from it, keep it. A nil Devpts does nothing.
func (d *Devpts) Close() error {
	if d == nil {
		return nil
	}
	return unix.Close(d.mnt)
}

// mountDevpts mounts d at /dev/pts in the calling thread's mount namespace,
// over what lies there. It moves d's own mount, not a copy: a terminal opened
// from d is then named by its path there, /dev/pts/N, as ttyname(3) reads it
// from /proc (a copy would leave it on a mount the command does not see,
// which musl's ttyname refuses). So d is mounted for one command only.
func mountDevpts(d *Devpts) error {
	if err := unix.MoveMount(d.mnt, "", unix.AT_FDCWD, "/dev/pts", unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("mounting a devpts at /dev/pts: %w", err)
	}
	return nil
}
