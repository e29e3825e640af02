package exec

import (
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// takeInheritedDescriptors marks every descriptor above stderr
// close-on-exec. Go marks the descriptors it opens itself, but not those the
// server inherited open (a shell's `exec 7>file`, a supervisor's pipe): each
// would reach every child, sandboxed or not, and let it write where its
// sandbox does not. A child gets exactly the descriptors its spawn gives it.
func takeInheritedDescriptors() error {
	err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if err != unix.ENOSYS && err != unix.EINVAL {
		return err
	}
	// Before Linux 5.11: one by one.
	names, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, n := range names {
		if fd, err := strconv.Atoi(n.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}
