package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// MinLandlockABI is the oldest Landlock ABI a sandbox is enforced with: ABI 3
// rules truncation, ABI 5 ioctls on devices (a tty's TIOCSTI, a disk's
// BLKDISCARD), ABI 6 signals and abstract Unix sockets leaving the sandbox.
// Without any of them a confined command could still write or reach out, so
// an older kernel refuses sandboxes rather than enforce a part of them.
const MinLandlockABI = 6

// Support is what the kernel and the server's privileges let a sandbox
// enforce. A probe of the running server fills it; tests build their own.
type Support struct {
	// LandlockABI is the kernel's Landlock ABI version; 0 means none.
	LandlockABI int
	// NetnsErr says why network namespaces cannot be made; nil when they can.
	NetnsErr error
	// CapsErr says why the capabilities a sandboxed child must lose cannot be
	// dropped; nil when they can, or when the server has none to lose.
	CapsErr error
	// MountErr says why the rest of the filesystem cannot be mounted
	// read-only for a command that confines it (confineMounts); nil when it
	// can. Without it Landlock alone rules the filesystem, and a command may
	// change the metadata of what the server's user owns outside its roots.
	MountErr error
	// DevptsErr says why a command that confines files cannot be given a
	// devpts of its own (devpts.go); nil when it can. Without it such a
	// command sees the host's /dev/pts, and may open the host's other
	// terminals that their modes allow (root's command: every one).
	DevptsErr error
	// IPCErr says why sandboxed commands cannot be kept from the host's
	// System V IPC and POSIX message queues (an IPC namespace of the
	// sandbox's, Sandbox.ipc); nil when they can.
	// Without it the command shares the host's: it may read and write the
	// shared memory, semaphores and queues of the server's user (of every
	// user, as root) that their modes allow.
	IPCErr error
	// DropCaps lists the capabilities to take out of a child's bounding set;
	// empty when the server does not run as root.
	DropCaps []uintptr
}

// missing lists what p needs and sup lacks, in words an operator can act on.
func (sup Support) missing(p Policy) []string {
	var out []string
	if sup.LandlockABI < MinLandlockABI {
		have := "none"
		if sup.LandlockABI > 0 {
			have = "ABI " + strconv.Itoa(sup.LandlockABI)
		}
		out = append(out, fmt.Sprintf("Landlock ABI %d or later (the kernel has %s)", MinLandlockABI, have))
	}
	if sup.CapsErr != nil {
		out = append(out, "dropping the child's capabilities ("+sup.CapsErr.Error()+")")
	}
	if n := p.network(); n != NetworkFull && sup.NetnsErr != nil {
		out = append(out, fmt.Sprintf("network namespaces for network %q (%v)", string(n), sup.NetnsErr))
	}
	return out
}

// Probe reports what the running kernel and server support.
func Probe() Support {
	var sup Support
	sup.LandlockABI = landlockABI()
	eff, err := effectiveCaps()
	if err != nil {
		sup.NetnsErr, sup.CapsErr, sup.MountErr, sup.DevptsErr, sup.IPCErr = err, err, err, err, err
		return sup
	}
	// unshare(CLONE_NEWNET) and unshare(CLONE_NEWNS) outside a user
	// namespace need CAP_SYS_ADMIN; Sandbox.New confirms it by making one
	// of each.
	if eff&(1<<unix.CAP_SYS_ADMIN) == 0 {
		sup.NetnsErr = errors.New("the server lacks CAP_SYS_ADMIN")
		sup.MountErr, sup.DevptsErr, sup.IPCErr = sup.NetnsErr, sup.NetnsErr, sup.NetnsErr
	}
	// Only root gets capabilities back at execve: any other user's child gets
	// none, since no_new_privs disregards file capabilities.
	if os.Geteuid() != 0 {
		return sup
	}
	last, err := lastCap()
	if err != nil {
		sup.CapsErr = err
		return sup
	}
	for c := uintptr(0); c <= last; c++ {
		if isKept(c) {
			continue
		}
		if in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, c, 0, 0, 0); err == nil && in == 1 {
			sup.DropCaps = append(sup.DropCaps, c)
		}
	}
	if len(sup.DropCaps) > 0 && eff&(1<<unix.CAP_SETPCAP) == 0 {
		sup.CapsErr = errors.New("the server runs as root without CAP_SETPCAP")
	}
	return sup
}

// isKept reports whether a sandboxed child started by root keeps capability
// c. It keeps those that act on files Landlock already bounds (chown,
// dac_override, fowner, fsetid), on its own identity (setuid, setgid), on
// signals Landlock scopes (kill), or on nothing outside it (audit_write;
// net_bind_service in a network of the command's own: Start drops it with
// the host's network, where a privileged port is the host's). Every other one reaches past the sandbox:
// sys_admin mounts and joins namespaces, net_admin moves an interface into
// the host's namespace, mknod makes a disk's device node inside a writable
// root, sys_module loads kernel code, and so on.
func isKept(c uintptr) bool {
	switch c {
	case unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_FOWNER, unix.CAP_FSETID,
		unix.CAP_KILL, unix.CAP_SETGID, unix.CAP_SETUID, unix.CAP_NET_BIND_SERVICE,
		unix.CAP_AUDIT_WRITE:
		return true
	}
	return false
}

func effectiveCaps() (uint64, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return 0, fmt.Errorf("capget: %w", err)
	}
	return uint64(data[1].Effective)<<32 | uint64(data[0].Effective), nil
}

func lastCap() (uintptr, error) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 || n > 63 {
		return 0, fmt.Errorf("cap_last_cap %q", b)
	}
	return uintptr(n), nil
}
