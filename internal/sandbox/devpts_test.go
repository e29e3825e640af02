package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// openPTY is the helper mode "openpty": what openpty(3) does, through the
// paths a program uses: /dev/ptmx, then the slave by the name ptsname gives.
func openPTY() string {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return outcome(err)
	}
	defer m.Close()
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		return outcome(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		return outcome(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err == nil {
		s.Close()
	}
	return outcome(err)
}

// ttyName is the helper mode "ttyname": what ttyname(3) finds for stdin (the
// path /proc names, if it is the same file), then the names in /dev/pts.
func ttyName() string {
	path, err := os.Readlink("/proc/self/fd/0")
	if err != nil {
		return outcome(err)
	}
	var in, named unix.Stat_t
	if err := unix.Fstat(0, &in); err != nil {
		return outcome(err)
	}
	if err := unix.Stat(path, &named); err != nil || named.Rdev != in.Rdev || named.Ino != in.Ino || named.Dev != in.Dev {
		path = "not a tty"
	}
	names, err := os.ReadDir("/dev/pts")
	if err != nil {
		return path + " " + outcome(err)
	}
	var list []string
	for _, n := range names {
		list = append(list, n.Name())
	}
	return path + " " + strings.Join(list, ",")
}

// TestOtherTerminalsAreHidden: a command that confines files sees a devpts
// of its own at /dev/pts, in which none of the host's terminals is (the
// server's, an administrator's SSH session: readable and writable by root
// through /dev/pts, ioctls included), and in which it still opens terminals
// of its own as openpty(3) does. A command that confines no files sees the
// host's, as it sees every other file.
func TestOtherTerminalsAreHidden(t *testing.T) {
	s := newSandbox(t, Options{})
	if err := s.Support().MountErr; err != nil {
		t.Skipf("this machine cannot make mount namespaces: %v", err)
	}
	if err := s.Support().DevptsErr; err != nil {
		t.Fatalf("the sandbox cannot give commands a devpts of their own: %v", err)
	}
	master, other, err := pty.Open() // a terminal of the host's, as an SSH session has
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer other.Close()
	for _, tt := range []struct {
		p    Policy
		open string
	}{
		{Policy{ReadOnly: true}, "ENOENT"},
		{Policy{ReadOnly: true, Network: NetworkNone}, "ENOENT"},
		{Policy{WritableRoots: []string{t.TempDir()}}, "ENOENT"},
		{Policy{WritableRoots: []string{"/"}}, "ENOENT"},
		{Policy{Network: NetworkNone}, "ok"},
	} {
		requireSupport(t, s, tt.p)
		if got := run(t, s, tt.p, helperCmd(t, "open", other.Name())); got != tt.open {
			t.Errorf("opening the host's terminal %s under %+v = %q, want %q", other.Name(), tt.p, got, tt.open)
		}
		if got := run(t, s, tt.p, helperCmd(t, "openpty")); got != "ok" {
			t.Errorf("openpty under %+v = %q, want ok", tt.p, got)
		}
	}
}

// TestTerminalOfItsOwnDevpts: a command that confines files, started on a
// terminal opened from its own devpts (Sandbox.Devpts), finds its terminal
// by name, as tty(1) does, and no other terminal beside it.
func TestTerminalOfItsOwnDevpts(t *testing.T) {
	s := newSandbox(t, Options{})
	if err := errors.Join(s.Support().MountErr, s.Support().DevptsErr); err != nil {
		t.Skipf("this machine cannot give commands a devpts of their own: %v", err)
	}
	p := Policy{ReadOnly: true}
	pts, err := s.Devpts(p)
	if err != nil || pts == nil {
		t.Fatalf("Devpts(%+v) = %v, %v", p, pts, err)
	}
	defer pts.Close()
	master, slave, err := pts.OpenPTY()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	cmd := helperCmd(t, "ttyname")
	cmd.Stdin = slave
	var out strings.Builder
	cmd.Stdout = &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if _, err := s.Start(p, cmd, pts); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got != "/dev/pts/0 0,ptmx" {
		t.Errorf("the command's tty and /dev/pts = %q, want %q", got, "/dev/pts/0 0,ptmx")
	}
	// Not confining files, the command gets no devpts of its own.
	if pts, err := s.Devpts(Policy{Network: NetworkNone}); pts != nil || err != nil {
		t.Errorf("Devpts(network none) = %v, %v; want nil, nil", pts, err)
	}
}
