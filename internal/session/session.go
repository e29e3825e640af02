// Package session keeps shell sessions: state that carries from one command
// to the next without a long-lived shell (docs/design/sessions.md). A
// session is its configuration and its current state, a
// shellsnap.SessionState; each command is a fresh shell restored from that
// state, run by the caller (the service, through exec), whose end state
// becomes the session's. The table orders a session's commands (one at a
// time), forks, keeps the last commands, and bounds sessions by count, idle
// time and state size.
package session

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/metric"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/sandbox"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// Defaults of Options' zero values.
const (
	// DefaultHistory is how many commands a session shows.
	DefaultHistory = 20
	// scriptShown is how much of a command's script its history keeps.
	scriptShown = 256
)

// The table's errors.
var (
	// ErrNotFound is a session the table does not hold.
	ErrNotFound = errors.New("no such session")
	// ErrBusy is a command for a session that runs one.
	ErrBusy = errors.New("the session is running a command")
	// ErrExists is a new session under an id the table holds.
	ErrExists = errors.New("a session with this id exists")
	// ErrTooMany is a new session beyond Options.MaxSessions.
	ErrTooMany = errors.New("the server holds as many sessions as it may")
	// ErrClosed is any operation after Close.
	ErrClosed = errors.New("sessions have ended: the server is shutting down")
)

// Options bound a Table. A zero bound bounds nothing.
type Options struct {
	// MaxSessions bounds the sessions held at once.
	MaxSessions int
	// IdleTimeout ends a session no command has used for this long.
	IdleTimeout time.Duration
	// MaxStateBytes bounds a state's dump: a command whose state is larger
	// leaves the session's as it was.
	MaxStateBytes int
	// History is how many commands a session shows; zero is DefaultHistory.
	History int
	// Standbys bounds the sessions that hold a standby shell for their next
	// command at once (Keep); zero holds none. StandbyIdle ends a standby
	// that waited this long (zero: a minute), so that an idle session
	// holds no shell.
	Standbys    int
	StandbyIdle time.Duration
	// Private holds the states' files (shellsnap.NewPrivateDirs); zero
	// makes them in the temporary directory.
	Private shellsnap.PrivateDirs
}

// Config is what a session is created with and keeps.
type Config struct {
	Shell shellsnap.Shell
	// Env is the environment every command starts with, before the restore.
	Env map[string]string
	// Cwd is the first working directory, absolute; "" is the server's.
	Cwd string
	// Sandbox confines every command of the session (and of its forks).
	Sandbox sandbox.Policy
}

// Command is one command in a session's history.
type Command struct {
	ProcessID string
	// Script is the command's script, cut to its first 256 bytes at most,
	// at a character's boundary.
	Script    string
	Status    exec.Status
	ExitCode  *int
	Signal    string
	StateKept bool
	StartedAt time.Time
	Duration  time.Duration
}

// Info is a session as the table shows it: names, never values.
type Info struct {
	ID         string
	Shell      shellsnap.Shell
	Cwd        string
	Busy       bool
	ForkedFrom string
	// Sandbox is the sandbox every command runs in.
	Sandbox sandbox.Policy
	// Standby is set when a standby shell waits for the next command.
	Standby    bool
	CreatedAt  time.Time
	LastUsedAt time.Time
	// Commands counts every command the session ran.
	Commands   int
	StateBytes int
	// Variables, Functions and Aliases are the state's names, sorted.
	Variables, Functions, Aliases []string
	// History is the last commands, oldest first.
	History []Command
}

// Stats are the table's totals for /stats.
type Stats struct {
	Active, Busy int
	// Commands counts the commands run; StateLost those that left the
	// session's state as it was.
	Commands, StateLost int64
	// Ended counts sessions ended by delete, idle time and shutdown.
	Deleted, Idle int64
}

// Table holds the sessions.
type Table struct {
	opts  Options
	files *shellsnap.SessionFiles
	m     *metrics
	stop  chan struct{}
	done  chan struct{}

	mu       sync.Mutex
	sessions map[string]*session
	closed   bool
	stats    Stats
	standbys int // the sessions holding a standby shell
}

type session struct {
	id         string
	cfg        Config
	state      *shellsnap.SessionState // nil until the first command ends
	busy       bool
	forkedFrom string
	created    time.Time
	used       time.Time
	commands   int
	history    []Command
	standby    *Standby // nil, or a shell restored from state
}

// New returns an empty table with its metrics on m (nil: none).
// Close ends it.
func New(opts Options, m metric.Meter) (*Table, error) {
	if opts.History <= 0 {
		opts.History = DefaultHistory
	}
	if opts.StandbyIdle <= 0 {
		opts.StandbyIdle = time.Minute
	}
	t := &Table{opts: opts, files: shellsnap.NewSessionFiles(opts.Private), sessions: map[string]*session{}, stop: make(chan struct{}), done: make(chan struct{})}
	var err error
	if t.m, err = newMetrics(m, t); err != nil {
		return nil, err
	}
	if opts.IdleTimeout > 0 {
		go t.sweep()
	} else {
		close(t.done)
	}
	return t, nil
}

// sweep ends idle sessions until Close.
func (t *Table) sweep() {
	defer close(t.done)
	tick := time.NewTicker(max(t.opts.IdleTimeout/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case now := <-tick.C:
			t.mu.Lock()
			t.endIdleLocked(now)
			t.mu.Unlock()
		}
	}
}

func (t *Table) endIdleLocked(now time.Time) {
	if t.opts.IdleTimeout <= 0 {
		return
	}
	for id, s := range t.sessions {
		if !s.busy && now.Sub(s.used) >= t.opts.IdleTimeout {
			t.dropStandbyLocked(s)
			delete(t.sessions, id)
			t.stats.Idle++
			t.m.ended(context.Background(), "idle")
		}
	}
}

// Lease is the right to run one command in a session: taken by Begin or
// Create, given back by End or Abort.
type Lease struct {
	t     *Table
	s     *session
	state *shellsnap.SessionState
	snap  *shellsnap.Snapshot
	cmd   *shellsnap.SessionCommand
	start time.Time
	first bool // the session's first command, which takes its first state
	// next is the state the command left, which End made the session's
	// (nil: none), for Settle.
	next *shellsnap.SessionState
	// early reads the command's end state while its shell exits; nil
	// when its dump is not watched.
	early *early
}

// Create adds a session under id, busy with its first command, which
// starts from snap (the scope's snapshot; nil for a bare shell): the caller
// runs it (Lease.Command) and ends it. A first command that leaves no state
// takes the session with it.
func (t *Table) Create(id string, cfg Config, snap *shellsnap.Snapshot) (*Lease, error) {
	if !shellsnap.SessionShell(cfg.Shell.Name) {
		return nil, shellsnap.ErrSessionShell
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	t.endIdleLocked(time.Now())
	if _, ok := t.sessions[id]; ok {
		return nil, ErrExists
	}
	if t.opts.MaxSessions > 0 && len(t.sessions) >= t.opts.MaxSessions {
		return nil, ErrTooMany
	}
	now := time.Now()
	s := &session{id: id, cfg: cfg, busy: true, created: now, used: now}
	t.sessions[id] = s
	return &Lease{t: t, s: s, snap: snap, start: now, first: true}, nil
}

// Begin takes session id for one command: ErrNotFound, or ErrBusy while
// another runs.
func (t *Table) Begin(id string) (*Lease, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	s, ok := t.sessions[id]
	if !ok {
		return nil, ErrNotFound
	}
	if s.busy {
		return nil, ErrBusy
	}
	s.busy = true
	return &Lease{t: t, s: s, state: s.state, start: time.Now()}, nil
}

// ID is the session's id.
func (l *Lease) ID() string { return l.s.id }

// Shell is the session's shell.
func (l *Lease) Shell() shellsnap.Shell { return l.s.cfg.Shell }

// Sandbox is the session's sandbox.
func (l *Lease) Sandbox() sandbox.Policy { return l.s.cfg.Sandbox }

// Cwd is the directory the command starts in: the state's, or the
// session's first.
func (l *Lease) Cwd() string {
	if l.state != nil && l.state.Cwd() != "" {
		return l.state.Cwd()
	}
	return l.s.cfg.Cwd
}

// Command builds the command that runs script in the session's state.
func (l *Lease) Command(script string) (*shellsnap.SessionCommand, error) {
	c, err := l.t.files.Command(shellsnap.SessionLaunch{
		Shell: l.s.cfg.Shell, Env: l.s.cfg.Env, Script: script, State: l.state, Snapshot: l.snap,
	})
	l.cmd = c
	if err == nil {
		l.watchEnd()
	}
	return c, err
}

// Outcome is what a command's end did to its session.
type Outcome struct {
	// StateKept is set when the command's end state is the session's now.
	StateKept bool
	// Reason says why it is not, for the client.
	Reason string
	// Cwd is the session's working directory after the command.
	Cwd     string
	Changes shellsnap.SessionChanges
}

// End gives the lease back after its command, which started (Command or a
// standby), ended with r (process id pid): the command's end state becomes the session's when it ended by
// itself (exited) and left one; otherwise the session keeps its state. A
// session deleted meanwhile keeps nothing.
func (l *Lease) End(script, processID string, r exec.Result) Outcome {
	var next *shellsnap.SessionState
	var changes shellsnap.SessionChanges
	out := Outcome{}
	switch {
	case r.Status != exec.StatusExited:
		out.Reason = "the command was ended (" + string(r.Status) + "): the session keeps the state it had before it"
	default:
		var err error
		if next, changes, err = l.finish(); err != nil {
			out.Reason = err.Error() + ": the session keeps the state it had before it"
			next = nil
		}
	}
	if next != nil {
		out.StateKept, out.Changes = true, changes
	}
	t := l.t
	t.mu.Lock()
	defer t.mu.Unlock()
	s := l.s
	s.busy = false
	s.used = time.Now()
	if next != nil && t.sessions[s.id] != s {
		// The session ended while its command ran: the command went on, as
		// the contract says, and its end state has nowhere to go.
		next, out.StateKept, out.Changes = nil, false, shellsnap.SessionChanges{}
		out.Reason = "the session ended while the command ran (deleted, or the server shutting down): its end state is dropped"
	}
	if next != nil {
		s.state, l.next = next, next
	}
	if s.standby != nil && s.standby.Cmd.From() != s.state {
		t.dropStandbyLocked(s)
	}
	out.Cwd = l.cwdLocked()
	if s.state == nil {
		// A first command that left no state: the session never was.
		if t.sessions[s.id] == s {
			delete(t.sessions, s.id)
		}
		return out
	}
	if l.first {
		return out
	}
	s.commands++
	t.stats.Commands++
	if !out.StateKept {
		t.stats.StateLost++
	}
	t.m.command(context.Background(), out.StateKept)
	s.history = append(s.history, Command{
		ProcessID: processID, Script: cutText(script, scriptShown), Status: r.Status, ExitCode: r.ExitCode, Signal: r.Signal,
		StateKept: out.StateKept, StartedAt: l.start, Duration: time.Since(l.start),
	})
	if n := len(s.history) - t.opts.History; n > 0 {
		s.history = slices.Delete(s.history, 0, n)
	}
	return out
}

// Abort gives the lease back for a command that never ran: one refused
// after Begin or Create took the session (its spawn refused by the process
// table, the sandbox or the kernel, its command not built). The session is
// left exactly as it was, its state, cwd, history, counts and last use; a
// session that Create added, whose first command this was, is removed, and
// its id is free again. The command's files, if built, are removed. Abort
// takes the place of End and Settle.
func (l *Lease) Abort() {
	l.stopEarly()
	if l.cmd != nil {
		l.cmd.Close()
	}
	t := l.t
	t.mu.Lock()
	defer t.mu.Unlock()
	l.s.busy = false
	if l.first && t.sessions[l.s.id] == l.s {
		delete(t.sessions, l.s.id)
	}
}

// Settle does what End leaves, once the command's answer is given: it
// removes the command's files and prepares the state it left for the next
// command (shellsnap.SessionFiles.Ready). The caller calls it once after
// End, off the answer's path: on ext4 it costs a millisecond or more (the
// restore file, the names, the directory removed), which no answer should
// wait for nor share the CPU with.
func (l *Lease) Settle() {
	l.stopEarly()
	if l.cmd != nil {
		l.cmd.Close()
	}
	if l.next != nil {
		l.t.files.Ready(l.next)
	}
}

// cutText is s cut to at most n bytes at a character's boundary, so that a
// cut never leaves half a UTF-8 character, which JSON would carry as U+FFFD.
// Bytes that are not UTF-8 are cut where they are.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for i := n; i > n-utf8.UTFMax && i > 0; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i]
		}
	}
	return s[:n]
}

func (l *Lease) cwdLocked() string {
	if l.s.state != nil && l.s.state.Cwd() != "" {
		return l.s.state.Cwd()
	}
	return l.s.cfg.Cwd
}

// Fork adds session newID starting from id's current state, with its
// configuration and no history. A session may be forked while it runs a
// command: the fork starts from the state before it.
func (t *Table) Fork(id, newID string) (Info, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return Info{}, ErrClosed
	}
	t.endIdleLocked(time.Now())
	parent, ok := t.sessions[id]
	if !ok || parent.state == nil {
		return Info{}, ErrNotFound
	}
	if _, ok := t.sessions[newID]; ok {
		return Info{}, ErrExists
	}
	if t.opts.MaxSessions > 0 && len(t.sessions) >= t.opts.MaxSessions {
		return Info{}, ErrTooMany
	}
	now := time.Now()
	s := &session{id: newID, cfg: parent.cfg, state: parent.state, forkedFrom: id, created: now, used: now}
	t.sessions[newID] = s
	return info(s), nil
}

// Delete ends session id. A command it runs goes on; its end is dropped.
func (t *Table) Delete(id string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.sessions[id]
	if !ok || s.state == nil {
		return ErrNotFound
	}
	t.dropStandbyLocked(s)
	delete(t.sessions, id)
	t.stats.Deleted++
	t.m.ended(context.Background(), "deleted")
	return nil
}

// Get returns session id.
func (t *Table) Get(id string) (Info, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.sessions[id]
	if !ok || s.state == nil {
		return Info{}, ErrNotFound
	}
	return info(s), nil
}

// List returns the sessions, oldest first.
func (t *Table) List() []Info {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Info
	for _, s := range t.sessions {
		if s.state != nil {
			out = append(out, info(s))
		}
	}
	slices.SortFunc(out, func(a, b Info) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return compareStrings(a.ID, b.ID)
	})
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Stats returns the table's totals.
func (t *Table) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.stats
	for _, s := range t.sessions {
		if s.state == nil {
			continue
		}
		st.Active++
		if s.busy {
			st.Busy++
		}
	}
	return st
}

// Close ends every session and removes their files. Commands still
// running are the process runner's to end.
func (t *Table) Close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	for id, s := range t.sessions {
		t.dropStandbyLocked(s)
		delete(t.sessions, id)
		t.m.ended(context.Background(), "shutdown")
	}
	t.mu.Unlock()
	close(t.stop)
	<-t.done
	t.files.Close()
}

func info(s *session) Info {
	in := Info{
		ID: s.id, Shell: s.cfg.Shell, Busy: s.busy, ForkedFrom: s.forkedFrom,
		CreatedAt: s.created, LastUsedAt: s.used, Commands: s.commands, History: slices.Clone(s.history),
		Cwd: s.cfg.Cwd, Sandbox: s.cfg.Sandbox, Standby: s.standby != nil,
	}
	if s.state != nil {
		if s.state.Cwd() != "" {
			in.Cwd = s.state.Cwd()
		}
		in.StateBytes = s.state.Size()
		in.Variables, in.Functions, in.Aliases = s.state.Names()
	}
	return in
}
