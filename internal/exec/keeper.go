package exec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// KeeperEnv names the environment variable that makes the server's binary
// run as its keeper (RunKeeper) instead of as the server. A binary that
// starts a Keeper calls RunKeeper, before anything else, when it is set.
const KeeperEnv = "SNAPEXEC_KEEPER"

// The keeper's records: a kind byte, then a pid (little endian). One record
// is one write of fewer than PIPE_BUF bytes, which the pipe never splits.
const (
	recordSize        = 5
	recordGroup       = 'g' // a process group started
	recordGroupEnded  = 'G' // it has ended: its id may be anyone's now
	recordEscape      = 'e' // a process that left its group, adopted by the server
	recordEscapeEnded = 'E' // it is about to be reaped: its pid may be anyone's now
)

// keeperCloseWait bounds how long Close waits for the keeper to exit.
const keeperCloseWait = 5 * time.Second

// Keeper is the server's end of its keeper: a small process, the server's own
// binary run again with KeeperEnv set, that outlives the server by nothing
// but what it takes to clean up after it. The Reaper tells it of every
// process group the managers start and end and of every escaped process it
// adopts and reaps, one buffered pipe write each, never a round trip. When
// the pipe closes, because the server exited, was killed with SIGKILL or
// crashed, the keeper kills with SIGKILL everything it was told of and did
// not hear end, and every descendant of those, then removes the directories
// it was started with (the server's private ones, which hold its shells'
// state: a server that was killed cannot remove them), and exits.
//
// What it cannot know: a group whose spawn had not been reported when the
// server died (the microseconds between the child's exec and the report),
// and a group whose id was reused between its end and the report of it (which
// takes the pid counter wrapping around in those microseconds).
type Keeper struct {
	cmd    *exec.Cmd
	onLost func(error)

	mu sync.Mutex
	w  *os.File // nil once closed or lost
}

// StartKeeper starts the keeper: this binary (os.Executable) with KeeperEnv
// set in an otherwise empty environment, its stdin the read end of the pipe,
// no other file (not one the server inherited: descriptors.go), in / and in
// a session of its own, so that a signal to the server's process group or
// terminal does not reach it. onLost, when set, is called once if the keeper
// goes away before Close. remove are absolute paths of directories the
// keeper removes, with everything in them, once the pipe has closed and the
// processes have ended; a server that removed them itself first loses
// nothing.
func StartKeeper(onLost func(error), remove []string) (*Keeper, error) {
	for _, dir := range remove {
		if !removable(dir) {
			return nil, fmt.Errorf("the keeper removes absolute directories only, not %q", dir)
		}
	}
	if err := takeInheritedDescriptors(); err != nil {
		return nil, fmt.Errorf("inherited descriptors: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{
		Path: self,
		Args: append([]string{"snapexec-keeper"}, remove...),
		// GORACE: a race-built binary (tests) would otherwise sleep a second
		// at exit, which Close waits for; other builds ignore it.
		Env:         []string{KeeperEnv + "=1", "GORACE=atexit_sleep_ms=0"},
		Dir:         "/",
		Stdin:       r,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	err = cmd.Start()
	_ = r.Close()
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	return &Keeper{cmd: cmd, onLost: onLost, w: w}, nil
}

// Pid returns the keeper's process id; 0 for a nil Keeper.
func (k *Keeper) Pid() int {
	if k == nil {
		return 0
	}
	return k.cmd.Process.Pid
}

// Close closes the server's end of the pipe, after which the keeper ends
// what it still knows of (nothing, after a clean shutdown) and exits; Close
// waits for that, within 5 s. A nil Keeper does nothing.
func (k *Keeper) Close() error {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	if k.w != nil {
		_ = k.w.Close()
		k.w = nil
	}
	k.mu.Unlock()
	exited := make(chan error, 1)
	go func() { exited <- k.cmd.Wait() }()
	select {
	case err := <-exited:
		return err
	case <-time.After(keeperCloseWait):
		return errors.New("the keeper did not exit")
	}
}

// send writes one record. A nil Keeper does nothing.
func (k *Keeper) send(kind byte, pid int) {
	if k == nil {
		return
	}
	var rec [recordSize]byte
	rec[0] = kind
	binary.LittleEndian.PutUint32(rec[1:], uint32(pid))
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.w == nil {
		return
	}
	if _, err := k.w.Write(rec[:]); err != nil {
		_ = k.w.Close()
		k.w = nil
		if k.onLost != nil {
			k.onLost(err)
		}
	}
}

// keeperPace is how long the keeper lets records gather in the pipe after
// each read. Woken for every record, two a command, the keeper cost 25 to 80
// µs of CPU a command (measured on a 2-core VM, where a wake-up is a costly
// context switch); paced, it wakes at most 1/keeperPace times a second
// however fast the server spawns, and never while the server is idle. It is
// also the longest the keeper takes to notice that the server has gone,
// within issue 14's bound of 2 s by far. The pipe holds 13107 records
// meanwhile.
const keeperPace = 10 * time.Millisecond

// RunKeeper is the keeper's main: it reads records from in (the pipe) until
// it closes, then kills what it knows of (endAll) and removes the
// directories remove (its arguments, as StartKeeper gave them). It ignores
// the signals that would end it early: it lives as long as the pipe.
func RunKeeper(in io.Reader, remove []string) error {
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGPIPE)
	endAll(readRecords(in))
	var errs []error
	for _, dir := range remove {
		if removable(dir) {
			errs = append(errs, os.RemoveAll(dir))
		}
	}
	return errors.Join(errs...)
}

// removable reports whether the keeper may remove dir: an absolute path,
// not the root.
func removable(dir string) bool {
	return filepath.IsAbs(dir) && filepath.Clean(dir) != "/"
}

// readRecords reads records from in until it ends and returns the groups and
// the escaped processes that the records leave running.
func readRecords(in io.Reader) (groups, escaped map[int]bool) {
	groups, escaped = map[int]bool{}, map[int]bool{}
	buf := make([]byte, 64<<10) // a pipe's default capacity
	held := 0                   // bytes of a record the last read cut, at buf's start
	for {
		n, err := in.Read(buf[held:])
		held += n
		whole := held - held%recordSize
		for rec := buf[:whole]; len(rec) > 0; rec = rec[recordSize:] {
			pid := int(binary.LittleEndian.Uint32(rec[1:recordSize]))
			switch rec[0] {
			case recordGroup:
				groups[pid] = true
			case recordGroupEnded:
				delete(groups, pid)
			case recordEscape:
				escaped[pid] = true
			case recordEscapeEnded:
				delete(escaped, pid)
			}
		}
		held = copy(buf, buf[whole:held])
		if err != nil {
			return groups, escaped
		}
		time.Sleep(keeperPace)
	}
}

// endAll kills with SIGKILL the process groups and the processes given, and
// every descendant of their members (a process that left its group while its
// parent stayed in it, say).
func endAll(groups, pids map[int]bool) {
	if len(groups)+len(pids) == 0 {
		return
	}
	self := os.Getpid()
	// Never init, never the keeper itself or its own group.
	kill := func(pid int, sig syscall.Signal) {
		if pid > 1 && pid != self {
			_ = syscall.Kill(pid, sig)
		}
	}
	killGroup := func(pgid int, sig syscall.Signal) {
		if pgid > 1 && pgid != self {
			_ = syscall.Kill(-pgid, sig)
		}
	}
	doomed := make(map[int]bool, len(pids))
	for p := range pids {
		doomed[p] = true
	}
	// Step 1: before any group is stopped, find what left the groups below
	// a live member. The pipe closes when a dying server's files are
	// released, before the kernel reparents its children and sends SIGHUP
	// and SIGCONT to every group orphaned with a member stopped: a member
	// dead of that SIGHUP no longer leads to what it started (a process that
	// left its group with setsid would outlive the server; seen in
	// TestKilledServerLeavesNothing).
	stopDescendants(groups, doomed, kill)
	// Step 2: stop what is known, so that nothing forks away while the
	// process tree is read again.
	for g := range groups {
		killGroup(g, syscall.SIGSTOP)
	}
	for p := range doomed {
		kill(p, syscall.SIGSTOP)
	}
	stopDescendants(groups, doomed, kill)
	// Step 3: kill them all; stopped processes die of SIGKILL too.
	for g := range groups {
		killGroup(g, syscall.SIGKILL)
	}
	for p := range doomed {
		kill(p, syscall.SIGKILL)
	}
}

// stopDescendants stops (kill with SIGSTOP) every descendant of the groups'
// members and of doomed that is in none of the groups, adds it to doomed,
// and reads the process table again until a read finds none new (one that
// forked before it was stopped).
func stopDescendants(groups, doomed map[int]bool, kill func(int, syscall.Signal)) {
	for range 10 {
		procs := readProcTable()
		children := make(map[int][]int)
		var queue []int
		for pid, p := range procs {
			children[p.ppid] = append(children[p.ppid], pid)
			if groups[p.pgrp] || doomed[pid] {
				queue = append(queue, pid)
			}
		}
		added, seen := 0, make(map[int]bool)
		for len(queue) > 0 {
			pid := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			if seen[pid] {
				continue
			}
			seen[pid] = true
			for _, c := range children[pid] {
				if !groups[procs[c].pgrp] && !doomed[c] {
					doomed[c] = true
					kill(c, syscall.SIGSTOP)
					added++
				}
				queue = append(queue, c)
			}
		}
		if added == 0 {
			return
		}
	}
}
