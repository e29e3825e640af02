package exec

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// reapInterval is how often the reaper looks for orphans when nobody asks.
const reapInterval = time.Second

// Reaper makes this process a child subreaper and reaps the orphans that
// re-parent to it: descendants of our children whose parent died (a
// background job of a shell, say). Without it they would re-parent to PID 1,
// which in a container often reaps nothing, and linger as zombies in their
// group. Only zombies that are not process-group leaders are reaped: every
// child this server starts leads its own group, and os/exec must collect those
// itself.
//
// Looking for orphans means reading /proc, so the reaper does it only when
// asked (Kick, from a group being ended while members remain) and once a
// second: never once per command, which would cost more than the command.
type Reaper struct {
	kick chan struct{}
}

// NewReaper makes this process a subreaper and reaps until ctx ends.
func NewReaper(ctx context.Context) (*Reaper, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, err
	}
	r := &Reaper{kick: make(chan struct{}, 1)}
	go func() {
		tick := time.NewTicker(reapInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-r.kick:
			case <-tick.C:
			}
			reapOrphans()
		}
	}()
	return r, nil
}

// Kick asks for a look for orphans soon; kicks that come while one is pending
// are merged. A nil Reaper does nothing.
func (r *Reaper) Kick() {
	if r == nil {
		return
	}
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// reapOrphans collects our zombie children that do not lead a process group.
func reapOrphans() {
	self := os.Getpid()
	dir, err := os.Open("/proc")
	if err != nil {
		return
	}
	names, _ := dir.Readdirnames(-1)
	_ = dir.Close()
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue
		}
		// The command name is in parentheses and may hold spaces: parse after it.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:]) // state ppid pgrp ...
		if len(f) < 3 || string(f[0]) != "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(string(f[1]))
		pgrp, _ := strconv.Atoi(string(f[2]))
		if ppid != self || pgrp == pid {
			continue
		}
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	}
}
