package sandbox

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock is driven through its three system calls, with golang.org/x/sys's
// numbers and types. A sandbox needs nothing more: its ruleset is built once
// per command and enforced on the one thread that forks the child. Not
// through go-landlock: its syscall package links libcap's psx (for
// enforcement on every thread, which a sandbox never wants), whose cgo build
// wraps pthread_create for the whole server and forces the external linker,
// at 4 to 5 MiB of the idle server's resident memory (docs/BENCHMARKS.md).

// The access rights a sandbox grants and handles. The handled sets are
// exactly those of ABI 6, MinLandlockABI, so that a ruleset means the same
// on every kernel that enforces it.
const (
	readRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	// rootRights is everything beneath a writable root but making device
	// nodes, which would open a disk to raw writes, and device ioctls.
	rootRights = readRights |
		unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_REFER |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	// deviceRights is what a command needs of /dev/null and its terminals.
	deviceRights = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	// fileRights are the rights that apply to a file that is not a
	// directory; the kernel refuses a rule that grants a file any other.
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV

	// handledFS is every filesystem right of ABI 6 (ABI 1's thirteen, REFER,
	// TRUNCATE and IOCTL_DEV).
	handledFS = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM | unix.LANDLOCK_ACCESS_FS_REFER |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	// handledNet is every network right of ABI 6 (TCP bind and connect).
	handledNet = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	// scoped is every scope of ABI 6: abstract Unix sockets and signals
	// stay inside the sandbox.
	scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
)

// checkRoots reports the first writable root of p that is missing or not a
// directory as a *FieldError.
func checkRoots(p Policy) error {
	for i, root := range p.roots() {
		if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
			return rootError(i, err == nil)
		}
	}
	return nil
}

// rootError is writable root i missing, or not a directory.
func rootError(i int, notDir bool) error {
	reason := "does not exist"
	if notDir {
		reason = "is not a directory"
	}
	return &FieldError{Field: fmt.Sprintf("sandbox.writableRoots[%d]", i), Reason: reason}
}

// pathRule grants access beneath each of paths, and of the directories
// fds hold open.
type pathRule struct {
	access uint64
	paths  []string
	fds    []int
	what   string // what fds hold, for an error
	// ignoreMissing skips a path that does not exist (a device this
	// machine lacks) rather than fail.
	ignoreMissing bool
}

// ruleset is what a policy asks Landlock to enforce.
type ruleset struct {
	attr  unix.LandlockRulesetAttr
	rules []pathRule
}

// rulesetOf builds the Landlock ruleset of p, whose writable roots are
// roots (openRoots): each rule is the directory its descriptor holds, never
// its path again. A command with a devpts of its own, pts, may use the
// terminals there, none of the host's.
func rulesetOf(p Policy, roots []root, pts *Devpts) ruleset {
	rs := ruleset{attr: unix.LandlockRulesetAttr{Scoped: scoped}}
	if p.confinesFiles() {
		rs.attr.Handled_access_fs = handledFS
		rs.rules = append(rs.rules,
			pathRule{access: readRights, paths: []string{"/"}},
			pathRule{access: deviceRights, paths: []string{"/dev/null", "/dev/tty", "/dev/ptmx"}, ignoreMissing: true},
		)
		terminals := pathRule{access: deviceRights | unix.LANDLOCK_ACCESS_FS_READ_DIR, what: "its devpts"}
		if pts != nil {
			terminals.fds = []int{pts.mnt}
		} else {
			terminals.paths, terminals.ignoreMissing = []string{"/dev/pts"}, true
		}
		rs.rules = append(rs.rules, terminals)
		if len(roots) > 0 {
			fds := make([]int, len(roots))
			for i, r := range roots {
				fds[i] = r.fd
			}
			rs.rules = append(rs.rules, pathRule{access: rootRights, fds: fds, what: "a writable root"})
		}
	}
	if p.network() == NetworkNone {
		// The namespace already has no way out; TCP rules also hold should a
		// way appear, at no cost.
		rs.attr.Handled_access_net = handledNet
	}
	return rs
}

// open creates the ruleset in the kernel and returns its descriptor, for
// landlockRestrictSelf. On an error nothing stays open.
func (rs ruleset) open() (int, error) {
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET,
		uintptr(unsafe.Pointer(&rs.attr)), unsafe.Sizeof(rs.attr), 0)
	if errno != 0 {
		return -1, fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	for _, r := range rs.rules {
		for _, path := range r.paths {
			err := addPathRule(int(fd), path, r.access)
			if r.ignoreMissing && errors.Is(err, unix.ENOENT) {
				continue
			}
			if err != nil {
				unix.Close(int(fd))
				return -1, fmt.Errorf("landlock rule for %s: %w", path, err)
			}
		}
		for _, dir := range r.fds {
			if err := addRule(int(fd), dir, r.access); err != nil {
				unix.Close(int(fd))
				return -1, fmt.Errorf("landlock rule for %s: %w", r.what, err)
			}
		}
	}
	return int(fd), nil
}

// addPathRule grants access beneath path (only the rights that apply to a
// file when path is not a directory).
func addPathRule(rulesetFD int, path string, access uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return addRule(rulesetFD, fd, access)
}

// addRule grants access beneath what fd holds (only the rights that apply
// to a file when it is not a directory).
func addRule(rulesetFD, fd int, access uint64) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= fileRights
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rulesetFD),
		unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// landlockRestrictSelf enforces the ruleset on the calling thread, and on
// what it forks from then on.
func landlockRestrictSelf(rulesetFD int) error {
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rulesetFD), 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// landlockABI is the kernel's Landlock ABI version; 0 when it has none (or
// Landlock is off).
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}
