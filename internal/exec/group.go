package exec

import (
	"errors"
	"os"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// killer ends a process group in two steps: SIGTERM to the whole group, then,
// once the grace period is over, SIGKILL to the whole group. os/exec's own
// WaitDelay kill reaches only the direct child, which is why this exists.
type killer struct {
	pgid   int
	grace  time.Duration
	reaper *Reaper
	// tty is set for a process that runs on a terminal: the first step is
	// SIGHUP rather than SIGTERM, as when a terminal closes.
	tty *terminal
	// session is set for a process that leads a session (on a terminal, or
	// Spec.NewSession): every group of the session (a job-control shell's
	// jobs, in groups of their own) is ended with the process's.
	session bool
	step    int              // 0: nothing sent, 1: SIGTERM sent, 2: SIGKILL sent, 3: given up
	next    <-chan time.Time // fires when the next step is due
}

// terminate starts the kill unless it has started, and returns the ending to
// record: the first reason given wins.
func (k *killer) terminate(ending, why Status) Status {
	if k.step == 0 {
		k.escalate()
	}
	if ending != "" {
		return ending
	}
	return why
}

// escalate takes the next step of the kill.
func (k *killer) escalate() {
	k.step++
	switch k.step {
	case 1:
		if k.tty != nil {
			// Hang up, as a closing terminal does: an interactive shell
			// ignores SIGTERM but ends on SIGHUP, and hangs up its jobs as
			// it goes.
			k.signal(syscall.SIGHUP)
			break
		}
		k.signal(syscall.SIGTERM)
	case 2:
		k.signal(syscall.SIGKILL)
	}
	k.next = time.After(k.grace)
}

// signal sends sig to the group and, for a process that leads a session, to
// every other group of its session. The session is read from /proc only here, at
// a step of a kill, never while the process runs.
func (k *killer) signal(sig syscall.Signal) {
	signalGroup(k.pgid, sig)
	if !k.session {
		return
	}
	for _, g := range sessionGroups(k.pgid) {
		if g != k.pgid {
			signalGroup(g, sig)
		}
	}
}

// sessionGroups returns the process groups of the session sid.
func sessionGroups(sid int) []int {
	var groups []int
	for _, p := range readProcTable() {
		if p.sid == sid && p.pgrp > 0 && !slices.Contains(groups, p.pgrp) {
			groups = append(groups, p.pgrp)
		}
	}
	return groups
}

// reap runs after the group's leader has exited. Descendants may still run and
// hold the pipes: it gives them drain (or the rest of the grace, once a kill has
// started) to finish, then ends whatever is left of the group (for a process
// that leads a session, of its session: alive), so that no request ever leaves a
// process behind. It returns once the group is empty and
// the pipes are closed (pipesClosed: the readers have read them to the end),
// once the group is empty after the drain and a write end is still open
// (whatever holds it then left the group), or once a process has outlived
// SIGKILL's grace. writersGone reports whether every write end is closed.
func (k *killer) reap(pipesClosed <-chan struct{}, writersGone func() bool, drain time.Duration) {
	if k.step == 0 {
		k.next = time.After(drain)
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	closed := false
	for k.step < 3 {
		if !closed && isClosed(pipesClosed) {
			closed, pipesClosed = true, nil
		}
		alive := k.alive()
		if !alive && !closed && writersGone() {
			// Empty group and no writer left: the readers are only behind
			// (a burst, a busy machine) and end once they have read what
			// the pipes still buffer. Closing the pipes now would lose it.
			<-pipesClosed
			return
		}
		if !alive && (closed || k.step > 0) {
			// Empty group; with a pipe still open for writing once the drain
			// is over, only a process that left the group holds it, and it
			// is not ours to wait on (the reaper ends it at shutdown).
			return
		}
		if alive {
			// Members left after the leader are orphans now, ours to reap
			// once they die: a zombie still counts as a member.
			k.reaper.Kick()
		}
		select {
		case <-tick.C:
		case <-pipesClosed:
		case <-k.next:
			k.escalate()
		}
	}
}

// alive reports whether a process of the group is left, or, for a process
// that leads a session, of its session: a job-control shell's jobs run in groups of
// their own, which the kill's steps reach (signal), and which must be waited
// for as the group is. The session is read from /proc only once the group
// is empty.
func (k *killer) alive() bool {
	return groupAlive(k.pgid) || k.session && len(sessionGroups(k.pgid)) > 0
}

// pipeWritersGone reports whether every write end of the pipe r reads is
// closed: poll reports POLLHUP then, even while data is still buffered.
func pipeWritersGone(r *os.File) bool {
	return polled(r, unix.POLLIN, unix.POLLHUP)
}

// polled reports whether poll, asked for events on f without waiting,
// reports want.
func polled(f *os.File, events, want int16) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	got := false
	err = rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: events}}
		n, err := unix.Poll(fds, 0)
		for errors.Is(err, unix.EINTR) {
			n, err = unix.Poll(fds, 0)
		}
		got = err == nil && n > 0 && fds[0].Revents&want != 0
	})
	return err == nil && got
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// signalGroup sends sig to every process of the group pgid. A group that is
// already gone is not an error.
func signalGroup(pgid int, sig syscall.Signal) {
	if pgid <= 0 {
		return // never signal our own group or every process
	}
	_ = syscall.Kill(-pgid, sig)
}

// groupAlive reports whether any process (a zombie included) is still in the group.
func groupAlive(pgid int) bool {
	if pgid <= 0 {
		return false
	}
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
