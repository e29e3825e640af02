package session

import (
	"os"
	"time"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// Standby shells of sessions (docs/design/sessions.md#standby-shells): a
// session holds at most one, a shell that restored its current state and
// waits for the next command's go-ahead. The caller builds it
// (StandbyCommand), holds it (exec.Manager.Hold) and gives it to the
// session (Keep); the next command takes it (Lease.Standby).

// Standby is a shell held for a session's next command.
type Standby struct {
	// Held is the shell, waiting for its go-ahead (Cmd.GoAhead).
	Held *exec.Held
	// Cmd is its command: the state it restored, the files it dumps into.
	Cmd *shellsnap.SessionCommand
	// Dir is the directory it started in, as it was then (nil: unknown):
	// a command whose directory is no longer that one runs fresh.
	Dir os.FileInfo

	since time.Time
	timer *time.Timer // ends it after Options.StandbyIdle
}

// Discard ends the shell and removes its files.
func (sb *Standby) Discard() {
	sb.Held.Discard()
	sb.Cmd.Close()
}

// StandbyCommand builds the command of a standby shell for session id's
// current state, and returns it with the session's configuration and the
// directory it starts in. ok is false when the session may not have one
// now: it holds one, runs a command, has ended, no standby serves its state
// (shellsnap.ErrNoSessionStandby), or Options.Standbys is zero.
func (t *Table) StandbyCommand(id string) (cmd *shellsnap.SessionCommand, cfg Config, dir string, ok bool) {
	if t.opts.Standbys <= 0 {
		return nil, Config{}, "", false
	}
	t.mu.Lock()
	s, found := t.sessions[id]
	if !found || t.closed || s.busy || s.standby != nil || s.state == nil {
		t.mu.Unlock()
		return nil, Config{}, "", false
	}
	state, cfg := s.state, s.cfg
	t.mu.Unlock()
	cmd, err := t.files.Command(shellsnap.SessionLaunch{Shell: cfg.Shell, Env: cfg.Env, State: state, Standby: true})
	if err != nil {
		return nil, Config{}, "", false
	}
	dir = cfg.Cwd
	if state.Cwd() != "" {
		dir = state.Cwd()
	}
	return cmd, cfg, dir, true
}

// Keep gives session id the standby sb, made from StandbyCommand's command
// and restored. It reports false, and the caller discards sb, when the
// session's state changed meanwhile, it runs a command, it holds a standby
// already, or it has ended. When Options.Standbys are held already, the one
// idle the longest ends.
func (t *Table) Keep(id string, sb *Standby) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.sessions[id]
	if !ok || t.closed || s.busy || s.standby != nil || s.state != sb.Cmd.From() {
		return false
	}
	if t.standbys >= t.opts.Standbys {
		var oldest *session
		for _, o := range t.sessions {
			if o.standby != nil && (oldest == nil || o.standby.since.Before(oldest.standby.since)) {
				oldest = o
			}
		}
		t.dropStandbyLocked(oldest)
	}
	sb.since = time.Now()
	s.standby = sb
	t.standbys++
	sb.timer = time.AfterFunc(t.opts.StandbyIdle, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if s.standby == sb {
			t.dropStandbyLocked(s)
		}
	})
	return true
}

// takeStandbyLocked removes s's standby and returns it, or nil.
func (t *Table) takeStandbyLocked(s *session) *Standby {
	sb := s.standby
	if sb == nil {
		return nil
	}
	sb.timer.Stop()
	s.standby = nil
	t.standbys--
	return sb
}

// dropStandbyLocked ends s's standby, if it holds one.
func (t *Table) dropStandbyLocked(s *session) {
	if s == nil {
		return
	}
	if sb := t.takeStandbyLocked(s); sb != nil {
		sb.Discard()
	}
}

// StandbyServes reports whether a standby shell of the state l starts from
// would run script exactly as the fresh command would
// (shellsnap.SessionStandbyServes).
func (l *Lease) StandbyServes(script string) bool {
	return shellsnap.SessionStandbyServes(l.state, script)
}

// Standby takes the session's standby shell for l's command, when one waits
// in the state l starts from, and makes its command l's; nil otherwise. The
// caller runs the command in it (exec.Held.Release with Cmd.GoAhead) and
// ends l as usual, or discards it and builds l's command (Command).
func (l *Lease) Standby() *Standby {
	t := l.t
	t.mu.Lock()
	sb := t.takeStandbyLocked(l.s)
	t.mu.Unlock()
	if sb == nil {
		return nil
	}
	if sb.Cmd.From() != l.state {
		sb.Discard()
		return nil
	}
	l.cmd = sb.Cmd
	l.watchEnd()
	return sb
}
