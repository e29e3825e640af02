package exec

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Children start clean: every signal at its default disposition and none
// blocked, whatever this process inherited (nohup's ignored SIGHUP, a
// shell's trap '' INT, a blocked mask).
//
// What Go's fork and exec do (syscall.forkAndExecInChild1 and the runtime's
// syscall_runtime_BeforeFork and syscall_runtime_AfterForkInChild, Go 1.26):
// between fork and exec the child resets to SIG_DFL only the signals the
// runtime handles itself (clearSignalHandlers: those with handlingSig set),
// then restores the signal mask the forking thread had just before the fork.
// execve keeps every SIG_IGN and the mask. The runtime handles almost every
// signal from the start, but not SIGHUP or SIGINT when they were ignored at
// start (sigInstallGoHandler respects an inherited SIG_IGN for those two), nor
// the job-control signals SIGCONT, SIGTSTP, SIGTTIN and SIGTTOU (_SigDefault:
// left as inherited until someone asks for them), nor one ignored with
// signal.Ignore. And every thread runs with the mask the program started with
// (initSigmask), less the signals the runtime must receive.
//
// Hence two measures, neither of which adds an exec to a spawn:
//   - takeInheritedSignals asks, once, for every signal that is ignored or
//     blocked when the reaper starts with signal.Notify, and drops what
//     arrives. The runtime then handles it, so that the fork resets it to
//     SIG_DFL in every child, while this process still ignores it in effect.
//   - When this process started with a non-empty mask, startCmd forks from a
//     thread locked for the spawn whose mask is empty meanwhile, so that the
//     child restores an empty mask. The delivery this allows of a signal
//     pending for the process is safe: takeInheritedSignals took it.
//
// Left as inherited: signals 32 to 34, the runtime's own (it never hands them
// to Notify); and SIGTTIN and SIGTTOU when this process has a controlling
// terminal, since a read or write of that terminal from a background group
// with either signal handled rather than ignored is retried for ever.

// takeInheritedSignals makes the runtime handle every signal that is ignored
// or blocked now, until ctx ends, and reports whether the mask blocks any.
func takeInheritedSignals(ctx context.Context) (masked bool) {
	sigs, mask := inheritedSignals()
	if len(sigs) > 0 {
		taken := make(chan os.Signal, 16)
		signal.Notify(taken, sigs...)
		go func() {
			defer signal.Stop(taken)
			for {
				select {
				case <-taken: // ignored, as it was
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	return mask != unix.Sigset_t{}
}

// inheritedSignals returns the signals signal.Notify can take that are
// ignored, or blocked on this thread (which has the mask of every thread), and
// that mask.
func inheritedSignals() ([]os.Signal, unix.Sigset_t) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var mask unix.Sigset_t
	_ = unix.PthreadSigmask(unix.SIG_BLOCK, nil, &mask)
	terminal := hasTerminal()
	var sigs []os.Signal
	for sig := 1; sig <= 64; sig++ {
		switch {
		case sig == int(syscall.SIGKILL), sig == int(syscall.SIGSTOP), sig >= 32 && sig <= 34:
			continue
		case terminal && (sig == int(syscall.SIGTTIN) || sig == int(syscall.SIGTTOU)):
			continue
		}
		blocked := mask.Val[(sig-1)/64]&(1<<((sig-1)%64)) != 0
		if blocked || ignored(sig) {
			sigs = append(sigs, syscall.Signal(sig))
		}
	}
	return sigs, mask
}

// hasTerminal reports whether this process has a controlling terminal.
func hasTerminal() bool {
	fd, err := unix.Open("/dev/tty", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	_ = unix.Close(fd)
	return true
}

// ignored reports whether sig's disposition is SIG_IGN. x/sys/unix has no
// sigaction: the kernel's struct sigaction begins with the handler (on every
// architecture but MIPS), and the query writes at most 32 bytes of it.
func ignored(sig int) bool {
	var act [4]uint64
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&act)), 8, 0, 0)
	return errno == 0 && act[0] == 1 // SIG_IGN
}

// startCmd starts cmd; with masked, from a thread whose signal mask is empty
// for the fork, so that the child starts with an empty mask.
func startCmd(cmd *exec.Cmd, masked bool) error {
	if !masked {
		return cmd.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var empty, old unix.Sigset_t
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &empty, &old); err != nil {
		return cmd.Start()
	}
	defer func() { _ = unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil) }()
	return cmd.Start()
}
