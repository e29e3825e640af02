package exec

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/snapexec/snapexec/internal/sandbox"
)

// reapInterval is how often the reaper looks at its children when nobody asks.
const reapInterval = time.Second

// Reaper is the process-wide side of the runner; a process has one, every
// Manager in it uses it, and nothing else in it starts a child in a process
// group of its own: the kernel keeps no record of who forked an adopted
// process, so a child of ours that the managers did not start and that is not
// in our own group looks exactly like one that escaped them. (A server run as
// PID 1 adopts every orphan in its container, and counts those too.) It
//   - makes this process a child subreaper, so that descendants of our
//     children whose parent died (a shell's background job, a daemon that
//     forked twice) are adopted by it rather than by PID 1, which in a
//     container often reaps nothing, and reaps those that die;
//   - knows every process group the managers start, until it ends, and tells
//     its Keeper, which kills them all if this process dies without ending
//     them (SIGKILL, a crash);
//   - finds the adopted processes that left their group (setsid, a job-control
//     shell's own groups), which no group kill reaches: it counts them,
//     reports each once (OnEscape), tells the keeper, and ends them at
//     Shutdown at the latest;
//   - makes children start with default signal dispositions and an empty
//     mask whatever this process inherited (signals.go).
//
// Looking at children means reading /proc, so the reaper does it only when
// asked (Kick, from a group being ended while members remain) and once a
// second: never once per command, which would cost more than the command.
// Nor while nothing can escape: when the last look found no escaped process
// and nothing below a group's members, and every live group is held (a
// standby waiting for its go-ahead, which runs nothing until Release), the
// looks pause until a group starts, ends or is released, so that an idle
// server with standbys waiting uses no CPU. A group that starts or is
// released resumes them a second later, not at once: its leader has no
// descendant yet for a look to see, and a look (about 2 ms of CPU with 100
// processes) on every command of an otherwise idle server would cost more
// than the command.
type Reaper struct {
	kick     chan struct{}
	resume   chan struct{}
	keeper   *Keeper
	onEscape func(Escape)
	self     int  // this process
	ownGroup int  // this process's group: its members are not the managers' children
	masked   bool // this process started with signals blocked

	// spawning is held for reading from a fork until its group is recorded,
	// and for writing by a look at the children while it decides, which so
	// never takes a child whose group is not recorded yet for an orphan.
	spawning sync.RWMutex

	mu      sync.Mutex
	groups  map[int]struct{} // live groups the managers started, by id (their leader's pid)
	held    map[int]struct{} // those groups that are held processes (Manager.Hold), not yet released
	escaped map[int]int      // adopted processes outside those groups, told to the keeper: pid to process group
	origins map[int]int      // processes below a member of those groups, at the last look: pid to the group
	total   atomic.Int64     // escaped processes found since the start
	// paused is set while the looks wait for a kick or a resume only
	// (quietLocked).
	paused atomic.Bool
}

// ReaperOptions configures a Reaper.
type ReaperOptions struct {
	// Keeper, when set, is told of every group and escaped process.
	Keeper *Keeper
	// OnEscape, when set, is called once for every escaped process found.
	OnEscape func(Escape)
}

// Escape is a process that left the process group it was started in and was
// adopted by this process.
type Escape struct {
	Pid int
	// Program is the process's command name (its /proc comm), never an
	// argument.
	Program string
	// Group is the process group it left, when it was seen in time: below a
	// member of that group at a look before it was adopted. Zero when
	// unknown.
	Group int
}

// NewReaper makes this process a child subreaper, takes the signals it
// inherited ignored or blocked (signals.go) and the descriptors it inherited
// open (descriptors.go), and looks at its children until ctx ends.
func NewReaper(ctx context.Context, opts ReaperOptions) (*Reaper, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, err
	}
	if err := takeInheritedDescriptors(); err != nil {
		return nil, fmt.Errorf("inherited descriptors: %w", err)
	}
	r := &Reaper{
		kick:     make(chan struct{}, 1),
		resume:   make(chan struct{}, 1),
		keeper:   opts.Keeper,
		onEscape: opts.OnEscape,
		self:     os.Getpid(),
		ownGroup: syscall.Getpgrp(),
		masked:   takeInheritedSignals(ctx),
		groups:   make(map[int]struct{}),
		held:     make(map[int]struct{}),
		escaped:  make(map[int]int),
		origins:  make(map[int]int),
	}
	go func() {
		tick := time.NewTicker(reapInterval)
		defer tick.Stop()
		for {
			ticks := tick.C
			r.mu.Lock()
			quiet := r.quietLocked()
			if quiet {
				ticks = nil
			}
			r.paused.Store(quiet)
			r.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-r.resume:
				// The next look comes a whole interval after the resume.
				tick.Reset(reapInterval)
				continue
			case <-r.kick:
			case <-ticks:
			}
			r.paused.Store(false)
			r.look()
		}
	}()
	return r, nil
}

// Kick asks for a look at the children soon; kicks that come while one is
// pending are merged. A nil Reaper does nothing.
func (r *Reaper) Kick() {
	if r == nil {
		return
	}
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Escaped returns how many escaped processes were found since the start.
// A nil Reaper has found none.
func (r *Reaper) Escaped() int64 {
	if r == nil {
		return 0
	}
	return r.total.Load()
}

// Shutdown ends every escaped process with SIGKILL (its group too, when it
// leads one), and every one found meanwhile, until none is left or ctx ends.
// Call it once the managers have shut down: their groups are gone, so what
// left them has been adopted by now.
func (r *Reaper) Shutdown(ctx context.Context) error {
	if r == nil {
		return nil
	}
	for {
		r.look()
		r.mu.Lock()
		left := make(map[int]int, len(r.escaped))
		for pid, pgrp := range r.escaped {
			left[pid] = pgrp
		}
		r.mu.Unlock()
		if len(left) == 0 {
			return nil
		}
		for pid, pgrp := range left {
			// Alive or unreaped, so its pid (and the group it leads) is still
			// its own.
			if pgrp == pid {
				signalGroup(pid, syscall.SIGKILL)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// start starts cmd confined by p (startConfined, with pts), whose child
// leads a new process group, and records the group before any look at the
// children can see the child. A nil Reaper just starts it.
func (r *Reaper) start(cmd *exec.Cmd, sb *sandbox.Sandbox, p sandbox.Policy, pts *sandbox.Devpts) (sandbox.Report, error) {
	if r == nil {
		return startConfined(cmd, sb, p, pts, false)
	}
	r.spawning.RLock()
	defer r.spawning.RUnlock()
	report, err := startConfined(cmd, sb, p, pts, r.masked)
	if err != nil {
		return sandbox.Report{}, err
	}
	pgid := cmd.Process.Pid
	r.mu.Lock()
	r.groups[pgid] = struct{}{}
	r.mu.Unlock()
	r.keeper.send(recordGroup, pgid)
	r.wake()
	return report, nil
}

// ended records that the group pgid has ended. A nil Reaper does nothing.
func (r *Reaper) ended(pgid int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	delete(r.groups, pgid)
	delete(r.held, pgid)
	r.mu.Unlock()
	r.keeper.send(recordGroupEnded, pgid)
	r.wake()
}

// hold records that the group pgid is a held process's, which runs nothing
// of a client's until release. A nil Reaper does nothing.
func (r *Reaper) hold(pgid int, held bool) {
	if r == nil {
		return
	}
	r.mu.Lock()
	if _, live := r.groups[pgid]; live && held {
		r.held[pgid] = struct{}{}
	} else {
		delete(r.held, pgid)
	}
	r.mu.Unlock()
	if !held {
		r.wake()
	}
}

// wake resumes the looks, a second from now, if they paused.
func (r *Reaper) wake() {
	if r.paused.Load() {
		select {
		case r.resume <- struct{}{}:
		default:
		}
	}
}

// quietLocked reports whether no look is needed until a group starts, ends
// or is released: the last look found nothing escaped and nothing below a
// group's members, and every live group is held.
func (r *Reaper) quietLocked() bool {
	// As PID 1 it adopts every orphan of its container, of which it hears
	// only by looking.
	return r.self != 1 && len(r.escaped) == 0 && len(r.origins) == 0 && len(r.held) == len(r.groups)
}

// look reads the process table and judges this process's children: it reaps
// the dead that nobody else waits for, and records the escaped. It also notes
// which group every process below a member of the managers' groups descends
// from, so that one that escapes and is adopted later is reported with the
// group it left.
func (r *Reaper) look() {
	r.judge(readProcTable())
}

// judge is look's work on procs, a table read before it takes the locks.
func (r *Reaper) judge(procs map[int]procEntry) {
	var found []Escape
	r.spawning.Lock()
	r.mu.Lock()
	origins := make(map[int]int)
	for pid, p := range procs {
		_, inGroup := r.groups[p.pgrp]
		if p.ppid != r.self {
			// Not ours yet: note the group it descends from, in case it leaves.
			if parent, ok := procs[p.ppid]; ok {
				if _, parentIn := r.groups[parent.pgrp]; parentIn {
					origins[pid] = parent.pgrp
				} else if g, ok := r.origins[p.ppid]; ok {
					origins[pid] = g // its parent left a group before it
				}
			}
			if g, ok := r.origins[pid]; ok && origins[pid] == 0 {
				origins[pid] = g
			}
			continue
		}
		if _, leader := r.groups[pid]; leader || pid == r.keeper.Pid() || p.pgrp == r.ownGroup {
			continue // os/exec waits for these: the managers' leaders, the keeper, our own group's
		}
		if p.state == 'Z' {
			if _, ok := r.escaped[pid]; ok {
				delete(r.escaped, pid)
				r.keeper.send(recordEscapeEnded, pid) // before the pid is freed
			}
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
			continue
		}
		if _, ok := r.escaped[pid]; ok || inGroup {
			continue // known, or an orphan still in its group, which the group kill ends
		}
		// The table was read before the locks were taken: a leader may have
		// ended since, waited for and its group recorded ended, and its pid
		// may be free. Only what is still our child outside the groups now
		// is an escape (no leader can start meanwhile: spawning is held).
		now, ok := readProc(pid)
		_, grouped := r.groups[now.pgrp]
		if !ok || now.ppid != r.self || now.state == 'Z' || grouped {
			continue
		}
		r.escaped[pid] = now.pgrp
		r.keeper.send(recordEscape, pid)
		found = append(found, Escape{Pid: pid, Program: now.comm, Group: r.origins[pid]})
	}
	for pid := range r.escaped {
		if _, ok := procs[pid]; !ok {
			delete(r.escaped, pid) // reaped by someone else: its pid is free
			r.keeper.send(recordEscapeEnded, pid)
		}
	}
	r.origins = origins
	r.mu.Unlock()
	r.spawning.Unlock()
	r.total.Add(int64(len(found)))
	if r.onEscape != nil {
		for _, e := range found {
			r.onEscape(e)
		}
	}
}

// procEntry is what the reaper, the keeper and a terminal's kill read of a
// process.
type procEntry struct {
	state byte
	ppid  int
	pgrp  int
	sid   int
	comm  string
}

// readProcTable reads every process's state, parent, group and name from /proc.
func readProcTable() map[int]procEntry {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := dir.Readdirnames(-1)
	_ = dir.Close()
	procs := make(map[int]procEntry, len(names))
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if e, ok := readProc(pid); ok {
			procs[pid] = e
		}
	}
	return procs
}

// DescendsFrom reports whether pid is ancestor or one of its descendants,
// by the parents /proc shows now (an orphan adopted by a subreaper descends
// from it).
func DescendsFrom(pid, ancestor int) bool {
	for steps := 0; pid > 1 && steps < 4096; steps++ {
		if pid == ancestor {
			return true
		}
		p, ok := readProc(pid)
		if !ok {
			return false
		}
		pid = p.ppid
	}
	return pid == ancestor
}

// readProc reads one process's entry; false when it is gone.
func readProc(pid int) (procEntry, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procEntry{}, false
	}
	// The command name is in parentheses and may hold spaces: parse after it.
	open, close := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || close < open {
		return procEntry{}, false
	}
	f := bytes.Fields(stat[close+1:]) // state ppid pgrp session ...
	if len(f) < 4 || len(f[0]) != 1 {
		return procEntry{}, false
	}
	ppid, _ := strconv.Atoi(string(f[1]))
	pgrp, _ := strconv.Atoi(string(f[2]))
	sid, _ := strconv.Atoi(string(f[3]))
	return procEntry{state: f[0][0], ppid: ppid, pgrp: pgrp, sid: sid, comm: string(stat[open+1 : close])}, true
}
