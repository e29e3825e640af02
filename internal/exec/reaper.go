package exec

import (
	"bytes"
	"context"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Reap makes this process a child subreaper and reaps, until ctx ends, the
// orphans that re-parent to it: descendants of our children whose parent died
// (a background job of a shell, say). Without it they would re-parent to PID 1,
// which in a container often reaps nothing, and linger as zombies in their
// group. Only zombies that are not process-group leaders are reaped: every
// child this server starts leads its own group, and os/exec must collect those
// itself.
func Reap(ctx context.Context) error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	go func() {
		defer signal.Stop(sigs)
		// A slow tick as well: a SIGCHLD can be coalesced with one that os/exec
		// consumed the status of.
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-sigs:
			case <-tick.C:
			}
			reapOrphans()
		}
	}()
	return nil
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
