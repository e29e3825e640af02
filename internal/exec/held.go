package exec

import (
	"errors"
	"io"
	"os"
)

// ErrNotHeld means a held process can no longer be released: it has ended, or
// it was released or discarded before.
var ErrNotHeld = errors.New("held process is gone")

// Held is a process spawned ahead of need: an unlisted process (Spawn) whose
// limits wait, and which waits on its fd 3 for the go-ahead that Release
// sends. It closes its fd 4, the write end of a pipe, once it waits: Ready
// tells. A standby shell (package shellsnap/standby) is one.
type Held struct {
	m       *Manager
	p       *Process
	release *os.File      // the write end of the child's fd 3
	ready   chan struct{} // closed once the child's fd 4 is closed
	// discarded is set by Discard, under m.mu.
	discarded bool
}

// Hold spawns spec's program now, unlisted like Spawn, with the read end of a
// pipe as its fd 3 and the write end of another as its fd 4. It does not
// count as running until Release, and no limit of its own applies: spec's
// ID, Timeout and IdleTimeout are ignored (Release gives them). Shutdown ends
// held processes too.
func (m *Manager) Hold(spec Spec) (*Held, error) {
	spec.Timeout, spec.IdleTimeout = 0, 0
	p, ends, err := m.spawnUnlisted(spec, true)
	if err != nil {
		return nil, err
	}
	p.reaper.hold(p.pid, true)
	h := &Held{m: m, p: p, release: ends.release, ready: make(chan struct{})}
	go func() {
		// Nothing is written: the read ends when the child closes its fd 4,
		// or exits (as do what it started before, which may have it too).
		_, _ = io.Copy(io.Discard, ends.ready)
		_ = ends.ready.Close()
		close(h.ready)
	}()
	return h, nil
}

// Ready is closed once the held process has closed its fd 4, which it does
// when it waits for its go-ahead, or has ended.
func (h *Held) Ready() <-chan struct{} { return h.ready }

// Pid is the held process's id.
func (h *Held) Pid() int { return h.p.pid }

// Done is closed when the held process has ended.
func (h *Held) Done() <-chan struct{} { return h.p.done }

// Release makes the held process an ordinary one: it enters the table as
// spec.ID (or a generated id) with spec's Argv (what Info reports),
// Timeout and IdleTimeout, its run time starts now, and message is written to
// its fd 3, which is then closed. The rest of spec is the held one's. It
// returns ErrNotHeld when the process has ended or was released or
// discarded, and Start's errors for the id, MaxRunning and shutdown; the
// process stays held after those.
func (h *Held) Release(spec Spec, message []byte) (*Process, error) {
	m, p := h.m, h.p
	m.mu.Lock()
	if _, ok := m.unlisted[p]; !ok || h.discarded {
		m.mu.Unlock()
		return nil, ErrNotHeld
	}
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	if exited {
		m.mu.Unlock()
		return nil, ErrNotHeld
	}
	if m.stopping {
		m.mu.Unlock()
		return nil, ErrShuttingDown
	}
	id, err := m.admitLocked(spec.ID)
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	delete(m.unlisted, p)
	p.id = id
	if spec.Argv != nil {
		p.argv = append([]string(nil), spec.Argv...)
	}
	p.arm(spec)
	m.enterLocked(p)
	m.mu.Unlock()
	p.reaper.hold(p.pid, false)

	go func() {
		// A child that died meanwhile gives EPIPE: its ending says the rest.
		_, _ = h.release.Write(message)
		_ = h.release.Close()
	}()
	return p, nil
}

// Discard ends a held process that was not released: its group is terminated
// and its go-ahead pipe closed. It does nothing to a released process.
func (h *Held) Discard() {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	if _, ok := h.m.unlisted[h.p]; !ok || h.discarded {
		return
	}
	h.discarded = true
	h.p.Terminate(StatusTerminated)
	_ = h.release.Close()
}
