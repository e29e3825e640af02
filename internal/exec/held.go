package exec

import (
	"errors"
	"os"
)

// ErrNotHeld means a held process can no longer be released: it has ended, or
// it was released or discarded before.
var ErrNotHeld = errors.New("held process is gone")

// Held is a process spawned ahead of need: it runs, but it is not in the
// table, no limit of its own applies yet, and it waits on its fd 3 for the
// go-ahead that Release sends. A standby shell (shellsnap) is one.
type Held struct {
	m       *Manager
	p       *Process
	release *os.File // the write end of the child's fd 3
}

// Hold spawns spec's program now, in a process group of its own like Start,
// with the read end of a pipe as its fd 3. It is not in the table and does
// not count as running until Release; spec's ID, Tag, Timeout and IdleTimeout
// are ignored (Release gives them). Shutdown ends held processes too.
func (m *Manager) Hold(spec Spec) (*Held, error) {
	m.mu.Lock()
	if m.stopping {
		m.mu.Unlock()
		return nil, ErrShuttingDown
	}
	m.starting++
	m.mu.Unlock()
	spec.Timeout, spec.IdleTimeout = 0, 0
	p, release, err := start("", spec, m.procConfig(m.registerHeld, true))
	if err := m.spawned("", p, err); err != nil {
		return nil, err
	}
	return &Held{m: m, p: p, release: release}, nil
}

// registerHeld enters a spawned held process in the held set.
func (m *Manager) registerHeld(p *Process) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.starting--
	m.held[p] = false
}

// Done is closed when the held process has ended.
func (h *Held) Done() <-chan struct{} { return h.p.done }

// Release makes the held process an ordinary one: it enters the table as
// spec.ID (or a generated id) with spec's Tag, Argv (what Info reports),
// Timeout and IdleTimeout, its run time starts now, and message is written to
// its fd 3, which is then closed. The rest of spec is the held one's. It
// returns ErrNotHeld when the process has ended or was released or
// discarded, and Start's errors for the id, MaxRunning and shutdown; the
// process stays held after those.
func (h *Held) Release(spec Spec, message []byte) (*Process, error) {
	m, p := h.m, h.p
	m.mu.Lock()
	if discarded, ok := m.held[p]; !ok || discarded {
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
	delete(m.held, p)
	p.id, p.tag = id, spec.Tag
	if spec.Argv != nil {
		p.argv = append([]string(nil), spec.Argv...)
	}
	p.arm(spec)
	m.enterLocked(p)
	m.mu.Unlock()

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
	if discarded, ok := h.m.held[h.p]; !ok || discarded {
		return
	}
	h.m.held[h.p] = true
	h.p.Terminate(StatusTerminated)
	_ = h.release.Close()
}
