package sandbox

import (
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Landlock rules what a command does to a file's content and names: it does
// not rule chmod, chown, utimes or extended attributes. So a command whose
// filesystem is confined also gets a mount namespace of its own in which
// everything but its writable roots is mounted read-only: the kernel refuses
// a change of metadata there (EROFS) before any permission is looked at,
// root's included.

// confineMounts gives the calling thread a mount namespace of its own. With
// readOnly, every mount in it is read-only but the trees of roots, which keep
// the flags they had (a read-only filesystem mounted inside a root stays
// read-only). Each root's tree is copied from the directory its descriptor
// holds, never looked up by its path again (openRoots), and put back where
// the directory lay. With pts, a copy of that devpts is mounted at /dev/pts
// (devpts.go). The thread must be locked and must never run anything else:
// what its children inherit is the namespace this leaves it in. It needs
// CAP_SYS_ADMIN.
//
// The namespace's mounts are slaves of the host's: a mount or an unmount on
// the host reaches the command, nothing the command's namespace does reaches
// the host. A filesystem the host mounts after the command started comes in
// with the host's flags: Landlock still rules writes there, not metadata.
func confineMounts(roots []root, readOnly bool, pts *Devpts) error {
	// Each root's tree is copied first, with its mounts' flags as they are,
	// then put back over itself once everything else is read-only. A parent
	// root goes back before a root inside it, which then lies over the copy.
	if !readOnly {
		roots = nil
	}
	roots = slices.Clone(roots)
	slices.SortFunc(roots, func(a, b root) int { return strings.Compare(a.path, b.path) })
	roots = slices.CompactFunc(roots, func(a, b root) bool { return a.path == b.path })
	trees := make([]int, 0, len(roots))
	defer func() {
		for _, fd := range trees {
			unix.Close(fd)
		}
	}()
	for _, r := range roots {
		fd, err := unix.OpenTree(r.fd, "",
			unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
		if err != nil {
			return fmt.Errorf("copying the mounts of %s: %w", r.path, err)
		}
		trees = append(trees, fd)
	}
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
		return fmt.Errorf("unshare(CLONE_NEWNS): %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("making the mounts slaves: %w", err)
	}
	if readOnly {
		if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE,
			&unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
			return fmt.Errorf("mounting / read-only: %w", err)
		}
	}
	for i, r := range roots {
		if err := unix.MoveMount(trees[i], "", unix.AT_FDCWD, r.path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("mounting %s writable: %w", r.path, err)
		}
	}
	if pts != nil {
		return mountDevpts(pts)
	}
	return nil
}
